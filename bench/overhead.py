"""Cost of the instrumentation: instrumented vs plain KSPSolve, same process, interleaved repeats.

Run as ``python bench/overhead.py`` (it starts ``mpiexec -n 2`` itself) and writes
``bench/results/overhead.json``. Targets: ratio <= 1.02 at 1e5 unknowns per rank and <= 1.05 at
1e3 unknowns per rank. The ratio is the median over repeats of (instrumented / plain) of
back-to-back solves, the order alternating so that drift cancels. The instrumented solve uses
the monitor ``ksptrace run`` attaches (the C monitor where a compiler is found; its ``monitor``
field says which); ``python_monitor_cases`` measure the Python monitor in the same run.

The same cases are then measured for ``ksptrace.record`` (``record_cases``): solves of a KSP
inside a record block (the stamping monitor and the pre/post-solve hooks) against a plain KSP,
both with PETSc's event log on, which record turns on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "overhead.json"
NPROCS = 2
CASES = (  # (unknowns per rank, forced iterations, repeats, target ratio)
    (100_000, 300, 41, 1.02),
    (1_000, 2000, 101, 1.05),
)


def _summary(per_rank: int, nprocs: int, iterations: int, repeats: int, target: float,
             with_m: list[float], without_m: list[float], ratios: list[float]) -> dict[str, Any]:
    import numpy as np

    ratio = float(np.median(ratios))
    return {
        "unknowns_per_rank": per_rank, "nprocs": nprocs,
        "iterations": iterations, "repeats": repeats,
        "instrumented_median_s": float(np.median(with_m)),
        "plain_median_s": float(np.median(without_m)),
        "ratio_median": ratio,
        "ratio_of_medians": float(np.median(with_m) / np.median(without_m)),
        "ratio_of_minima": float(np.min(with_m) / np.min(without_m)),
        "ratio_quartiles": [float(np.percentile(ratios, 25)),
                            float(np.percentile(ratios, 75))],
        "per_iteration_overhead_us": float(
            (np.median(with_m) - np.median(without_m)) / iterations * 1e6),
        "target": target,
        "meets_target": ratio <= target,
    }


def _interleaved(a: Any, b: Any, repeats: int
                 ) -> tuple[list[float], list[float], list[float]]:
    """Back-to-back timed solves ``a()`` and ``b()``, the order alternating so that drift
    cancels."""
    a()
    b()  # warm caches for both
    ratios, with_m, without_m = [], [], []
    for r in range(repeats):
        if r % 2 == 0:
            ta, tb = a(), b()
        else:
            tb, ta = b(), a()
        with_m.append(ta)
        without_m.append(tb)
        ratios.append(ta / tb)
    return with_m, without_m, ratios


def _hook_cost(ksptrace: Any, setup: tuple[Any, ...], folder: str, mpicomm: Any
               ) -> dict[str, float]:
    """What record adds per solve (its pre- and post-solve hooks, the copy of the stamps) and
    per iteration (the monitor's callback, without petsc4py's dispatch), in-process: the
    minimum of several batches, which a loaded machine disturbs least."""
    import time

    _, iterations, _, _, problem, ksp = setup[:6]
    with ksptrace.record(ksp, Path(folder) / "hooks.h5", comm=mpicomm) as rec:
        problem.reset()
        ksp.solve(problem.rhs, problem.solution)  # PETSc's iteration count is now K
        batches = []
        for _ in range(7):
            spent = 0.0
            for _ in range(50):
                rec.monitor.stamps[: iterations + 1] = 1.0  # as the monitor leaves them
                t0 = time.perf_counter()
                rec._pre()
                rec._post()
                spent += time.perf_counter() - t0
            batches.append(spent / 50)
        callback, calls = rec.monitor.callback, []
        for _ in range(7):
            t0 = time.perf_counter()
            for k in range(iterations):
                callback(None, k, 1.0)
            calls.append((time.perf_counter() - t0) / iterations)
        rec.monitor.stamps[: iterations + 1] = 1.0
    return {"iterations": iterations, "hooks_per_solve_us": min(batches) * 1e6,
            "monitor_call_us": min(calls) * 1e6}


def measure() -> None:
    from ksptrace.harness.monitor import StampMonitor
    from ksptrace.harness.petscenv import init_petsc

    petsc = init_petsc([])
    from mpi4py import MPI

    import ksptrace
    from ksptrace.problems.laplace1d import build

    comm = petsc.COMM_WORLD
    mpicomm = comm.tompi4py()
    nprocs = mpicomm.Get_size()
    folder = mpicomm.bcast(tempfile.mkdtemp() if mpicomm.Get_rank() == 0 else None)
    # Instrumented and plain solves use one KSP, the monitor put on and taken off between
    # them: two KSP objects of one operator differ by up to 6 % at 1e5 unknowns per rank
    # (where their work vectors landed), which two KSPs would add to the ratio.
    setups = []
    for per_rank, iterations, repeats, target in CASES:
        problem = build(comm, per_rank * nprocs, {})
        ksp = problem.ksp
        ksp.setType("gmres")
        ksp.getPC().setType("jacobi")
        ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=iterations)
        ksp.setUp()

        def timed(ksp: Any = ksp, problem: Any = problem) -> float:
            problem.reset()
            mpicomm.Barrier()
            t0 = MPI.Wtime()
            ksp.solve(problem.rhs, problem.solution)
            t = MPI.Wtime() - t0
            return float(mpicomm.allreduce(t, op=MPI.MAX))

        def monitored(monitor: Any, ksp: Any = ksp, timed: Any = timed) -> float:
            monitor.reset()
            monitor.attach(ksp)
            try:
                return float(timed())
            finally:
                monitor.detach()
                ksp.cancelMonitor()  # the plain solve calls no monitor at all

        def python_monitored(monitor: Any, ksp: Any = ksp, timed: Any = timed) -> float:
            monitor.reset()
            ksp.setMonitor(monitor.callback)
            try:
                return float(timed())
            finally:
                ksp.cancelMonitor()

        def recorded(counter: list[int], ksp: Any = ksp, timed: Any = timed) -> float:
            counter[0] += 1
            path = Path(folder) / f"rec{counter[0]}.h5"
            with ksptrace.record(ksp, path, comm=mpicomm, overwrite=True) as rec:
                t = float(timed())
                counter[1] = int(rec.monitor.impl == "c")
            ksp.cancelMonitor()
            return t

        setups.append((per_rank, iterations, repeats, target, problem, ksp, timed, monitored,
                       python_monitored, recorded))
    results, python_results, recorded_results = [], [], []
    for per_rank, iterations, repeats, target, _, _, timed, monitored, python_monitored, _ \
            in setups:
        monitor = StampMonitor(iterations + 1, MPI.Wtime)
        results.append(_summary(per_rank, nprocs, iterations, repeats, target,
                                *_interleaved(partial(monitored, monitor), timed, repeats)))
        results[-1]["monitor"] = monitor.impl  # as ksptrace run attaches it
        python_monitor = StampMonitor(iterations + 1, MPI.Wtime)
        python_results.append(_summary(
            per_rank, nprocs, iterations, repeats, target,
            *_interleaved(partial(python_monitored, python_monitor), timed, repeats)))
        python_results[-1]["monitor"] = "python"
    # ksptrace.record turns PETSc's event log on (it reads KSPSolve's time there), for every
    # KSP of the process: from here on the plain solves are logged too. One record block (and
    # one trace, written outside the timed solve) per instrumented solve.
    for i, (per_rank, iterations, repeats, target, _, _, timed, _, _, recorded) in enumerate(
            setups):
        counter = [0, 0]
        with_m, without_m, ratios = _interleaved(partial(recorded, counter), timed, repeats)
        case = _summary(per_rank, nprocs, iterations, repeats, target, with_m, without_m, ratios)
        case["solves_recorded"] = counter[0]
        case["monitor"] = "c" if counter[1] else "python"
        case["logged_plain_vs_unlogged_plain"] = (
            case["plain_median_s"] / results[i]["plain_median_s"])
        recorded_results.append(case)
    hooks = _hook_cost(ksptrace, setups[-1], folder, mpicomm)
    for setup in setups:
        setup[4].destroy()
    if mpicomm.Get_rank() == 0:
        shutil.rmtree(folder, ignore_errors=True)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        load = os.getloadavg()
        RESULTS.write_text(json.dumps({
            "benchmark": "overhead", "cases": results, "record_cases": recorded_results,
            "python_monitor_cases": python_results,
            "note": "cases: the monitor ksptrace run attaches (its 'monitor' says which: 'c', "
                    "compiled on first use, or the 'python' fallback); python_monitor_cases: "
                    "the Python monitor in the same run, against the same plain solves",
            "record_note": "ksptrace.record's monitor and pre/post-solve hooks vs the same "
                           "solve without them, both with PETSc's event log on (record turns "
                           "it on)",
            "record_hooks": hooks,
            "loadavg_after": list(load)}, indent=2) + "\n")
        for label, rows in (("monitor", results), ("python monitor", python_results),
                            ("ksptrace.record", recorded_results)):
            for c in rows:
                print(f"{label} ({c['monitor']}): {c['unknowns_per_rank']:>7} unknowns/rank: ratio "
                      f"{c['ratio_median']:.4f} (target {c['target']}), "
                      f"{c['per_iteration_overhead_us']:.2f} us/iteration")
        print(f"ksptrace.record hooks: {hooks['hooks_per_solve_us']:.1f} us per solve, Python "
              f"monitor callback {hooks['monitor_call_us']:.2f} us per call (minima, "
              "in-process, without petsc4py's dispatch)")
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def main() -> int:
    if os.environ.get("KSPTRACE_BENCH_CHILD"):
        measure()
        return 0
    env = dict(os.environ, KSPTRACE_BENCH_CHILD="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    from ksptrace.harness.petscenv import locate_petsc4py

    locate_petsc4py(env)
    cmd = ["mpiexec", "-n", str(NPROCS), sys.executable, __file__]
    return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
