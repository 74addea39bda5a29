"""Cost of the noise machinery when it injects nothing: KSPSolve with and without the wrapper.

Three variants of the same ``ksptrace run``, interleaved in one run of this script (the order
rotates every repetition, so that drift and the machine's other load fall on all of them):

- ``baseline``: no ``--noise`` flag;
- ``none``: ``--noise none``, the same code path (nothing is wrapped), so its ratio to the
  baseline is the noise floor of the measurement;
- ``zero``: ``--noise fixed:value=0``, an active spec whose every detour is 0 s: the PC is
  wrapped in the Python detour PC (one Python PC application and one Python monitor call per
  iteration) but never spins. A spec with ``p=0`` would not do: it is inactive and leaves the PC
  unwrapped (the script checks both, and that each ``zero`` trace holds an all-zero
  ``injected_seconds`` while the others hold none).

The time is the trace's ``solve_max`` (PETSc's KSPSolve event, slowest rank); the per-iteration
median of the slowest rank's iteration times is reported beside it, being less sensitive to a
burst of foreign load. Every run carries the 1-minute load average before it and the foreign CPU
share its trace records. Target: the ``zero`` / ``baseline`` ratio of medians within the noise
floor (the spread of the paired ``none`` / ``baseline`` ratios).

Separate runs of a short solve differ by several percent on a shared 2-core machine, far more
than a Python PC application costs, so the script also measures the wrapper in one process
(``in_process``, as ``bench/overhead.py`` does): two KSPs on the same matrix, both with the
stamping monitor, one wrapped by ``wrap_pc`` with all-zero detours exactly as ``ksptrace run``
wraps it, solved back to back in alternating order; the ratio is the median of the paired
ratios.

    python bench/noise_overhead.py [--repeats 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.noise.spec import parse
from ksptrace.trace.read import read_trace

RESULTS = Path(__file__).resolve().parent / "results" / "noise_overhead.json"
VARIANTS: dict[str, list[str]] = {
    "baseline": [],
    "none": ["--noise", "none"],
    "zero": ["--noise", "fixed:value=0"],
}
ZERO_P_SPEC = "exponential:scale=1us,p=0"
CASES = (  # (ranks, unknowns (global), forced iterations)
    (2, 100_000, 1000),
    (1, 20_000, 1000),
)
FOREIGN_WARN = 0.10
"""The foreign CPU share above which ``ksptrace run`` warns that a run is contaminated."""
IN_PROCESS = (  # (ranks, unknowns (global), forced iterations, repeats)
    (2, 100_000, 300, 15),
    (1, 1_000, 5000, 41),
)
SOLVER_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
              "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def one_run(variant: str, nprocs: int, n: int, iterations: int, rep: int,
            out: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    path = out / f"{variant}-{nprocs}-{rep}.h5"
    cmd = [sys.executable, "-m", "ksptrace", "run", "--problem", "laplace1d", "--n", str(n),
           "--ksp", "gmres", "--pc", "jacobi", "--iterations", str(iterations),
           "--np", str(nprocs), "--out", str(path), "--overwrite",
           *VARIANTS[variant]]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    trace = read_trace(path)
    path.unlink()
    injected = trace.injected_seconds
    wrapped = injected is not None
    assert wrapped == (variant == "zero"), (variant, trace.attr("noise"))
    assert injected is None or float(np.max(injected)) == 0.0
    slowest = np.asarray(trace.iteration_seconds).max(axis=0)
    foreign = trace.attr("foreign_cpu_share")
    return {
        "variant": variant, "repetition": rep, "noise_attr": trace.attr("noise"),
        "pc_wrapped": wrapped, "solve_max_s": trace.solve_max,
        "iteration_median_us": float(np.median(slowest) * 1e6),
        "load_avg_1min_before": round(load, 2),
        "trace_loadavg_before": trace.attr("loadavg_before"),
        "foreign_cpu_share": None if foreign is None else round(float(foreign), 4),
    }


def compare(runs: list[dict[str, Any]], iterations: int) -> dict[str, Any]:
    """Per-variant times and the none/zero vs baseline ratios over these runs' repetitions."""
    by = {v: sorted((r for r in runs if r["variant"] == v), key=lambda r: r["repetition"])
          for v in VARIANTS}
    solve = {v: np.array([r["solve_max_s"] for r in rs]) for v, rs in by.items()}
    itmed = {v: np.array([r["iteration_median_us"] for r in rs]) for v, rs in by.items()}
    variants = {v: {"solve_median_s": float(np.median(solve[v])),
                    "solve_min_s": float(solve[v].min()), "solve_max_s": float(solve[v].max()),
                    "iteration_median_us": float(np.median(itmed[v]))} for v in VARIANTS}
    ratios: dict[str, Any] = {}
    for v in ("none", "zero"):
        paired = solve[v] / solve["baseline"]  # repetition r of each, back to back
        ratios[v] = {
            "ratio_of_medians": float(np.median(solve[v]) / np.median(solve["baseline"])),
            "paired_ratio_median": float(np.median(paired)),
            "paired_ratio_min_max": [float(paired.min()), float(paired.max())],
            "per_iteration_overhead_us": float(
                (np.median(solve[v]) - np.median(solve["baseline"])) / iterations * 1e6),
            "iteration_median_overhead_us": float(
                np.median(itmed[v]) - np.median(itmed["baseline"])),
        }
    floor = ratios["none"]["paired_ratio_min_max"]
    zero = ratios["zero"]["ratio_of_medians"]
    return {"repetitions": [r["repetition"] for r in by["baseline"]], "variants": variants,
            "ratios": ratios, "noise_floor": floor,
            "zero_within_noise_floor": floor[0] <= zero <= floor[1]}


def summarise(nprocs: int, n: int, iterations: int, runs: list[dict[str, Any]],
              load: tuple[float, float]) -> dict[str, Any]:
    """All repetitions, and (when at least 3) only those none of whose runs the harness would
    call contaminated (foreign CPU share above 10 %); every run is kept in ``runs``."""
    dirty = {r["repetition"] for r in runs if (r["foreign_cpu_share"] or 0.0) > FOREIGN_WARN}
    clean = [r for r in runs if r["repetition"] not in dirty]
    reps = len({r["repetition"] for r in clean})
    return {
        "nprocs": nprocs, "n": n, "iterations": iterations,
        "repeats": len({r["repetition"] for r in runs}),
        "all": compare(runs, iterations),
        "clean": compare(clean, iterations) if reps >= 3 else None,
        "load_avg_1min_start": round(load[0], 2), "load_avg_1min_end": round(load[1], 2),
        "foreign_cpu_share_max": max((r["foreign_cpu_share"] or 0.0) for r in runs),
        "runs_foreign_over_10pct": sum(
            (r["foreign_cpu_share"] or 0.0) > FOREIGN_WARN for r in runs),
        "runs": runs,
    }


def in_process_child(out: Path, case: int) -> None:
    """Wrapped vs plain KSPSolve in one MPI job (run under mpiexec by in_process())."""
    from ksptrace.harness.monitoring.monitor import StampMonitor
    from ksptrace.harness.petsc.petscenv import init_petsc
    from ksptrace.harness.runner.noise import wrap_pc
    from ksptrace.noise.draw import rank_detours

    petsc = init_petsc([])
    from mpi4py import MPI

    from ksptrace.problems.laplace1d import build

    _, n, iterations, repeats = IN_PROCESS[case]
    comm = petsc.COMM_WORLD
    mpicomm = comm.tompi4py()
    rank = mpicomm.Get_rank()
    problem = build(comm, n, {})
    wrapped, plain = problem.ksp, petsc.KSP().create(comm=comm)
    plain.setOperators(wrapped.getOperators()[0])
    monitors = []
    for ksp in (wrapped, plain):
        ksp.setType("gmres")
        ksp.getPC().setType("jacobi")
        ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=iterations)
        monitor = StampMonitor(iterations + 1, MPI.Wtime)
        monitor.attach(ksp)  # as ksptrace run does
        monitors.append(monitor)
    detours = rank_detours(parse(VARIANTS["zero"][1]), rank, 0, iterations + 1)
    ctx = wrap_pc(petsc, wrapped, detours)
    for ksp in (wrapped, plain):
        ksp.setUp()

    def timed(ksp: Any) -> float:
        problem.reset()
        for m in monitors:
            m.reset()
        mpicomm.Barrier()
        t0 = MPI.Wtime()
        ksp.solve(problem.rhs, problem.solution)
        return float(mpicomm.allreduce(MPI.Wtime() - t0, op=MPI.MAX))

    timed(wrapped)
    timed(plain)  # warm caches for both
    with_w, without_w = [], []
    for r in range(repeats):
        if r % 2 == 0:
            a, b = timed(wrapped), timed(plain)
        else:
            b, a = timed(plain), timed(wrapped)
        with_w.append(a)
        without_w.append(b)
    assert wrapped.getPC().getType() == "python"
    assert float(ctx.injected.max()) == 0.0
    plain.destroy()
    problem.destroy()
    if rank == 0:
        out.write_text(json.dumps({"wrapped_s": with_w, "plain_s": without_w}))


def in_process(case: int) -> dict[str, Any]:
    """Run in_process_child under mpiexec; its paired ratios and per-iteration overhead."""
    from ksptrace.harness.petsc.petscenv import locate_petsc4py

    nprocs, n, iterations, repeats = IN_PROCESS[case]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "in_process.json"
        env = dict(os.environ, KSPTRACE_BENCH_CHILD=str(out), KSPTRACE_BENCH_CASE=str(case))
        locate_petsc4py(env)
        start = os.getloadavg()[0]
        cmd = ["mpiexec", "-n", str(nprocs), sys.executable, __file__]
        subprocess.run(cmd, env=env, check=True)
        end = os.getloadavg()[0]
        raw = json.loads(out.read_text())
    wrapped, plain = np.array(raw["wrapped_s"]), np.array(raw["plain_s"])
    paired = wrapped / plain
    return {
        "nprocs": nprocs, "n": n, "iterations": iterations, "repeats": repeats,
        "what": "same process, same matrix: KSP whose PC is wrapped by wrap_pc with all-zero "
                "detours vs plain KSP, both with the stamping monitor; back to back, order "
                "alternating",
        "wrapped_median_s": float(np.median(wrapped)), "wrapped_min_s": float(wrapped.min()),
        "plain_median_s": float(np.median(plain)), "plain_min_s": float(plain.min()),
        "ratio_median": float(np.median(paired)),
        "ratio_of_medians": float(np.median(wrapped) / np.median(plain)),
        "ratio_min_max": [float(paired.min()), float(paired.max())],
        "ratio_quartiles": [float(np.percentile(paired, 25)), float(np.percentile(paired, 75))],
        "per_iteration_overhead_us": float(
            np.median(wrapped - plain) / iterations * 1e6),
        "per_iteration_overhead_us_of_minima": float(
            (wrapped.min() - plain.min()) / iterations * 1e6),
        "load_avg_1min_start": round(start, 2), "load_avg_1min_end": round(end, 2),
        "wrapped_s": wrapped.tolist(), "plain_s": plain.tolist(),
    }


def main() -> int:
    child = os.environ.get("KSPTRACE_BENCH_CHILD")
    if child:
        in_process_child(Path(child), int(os.environ["KSPTRACE_BENCH_CASE"]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="repetitions of each variant")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    for key, value in SOLVER_ENV.items():
        os.environ.setdefault(key, value)
    zero_spec, p0_spec = parse(VARIANTS["zero"][1]), parse(ZERO_P_SPEC)
    assert zero_spec.active
    assert zero_spec.mean_detour() == 0.0
    assert not p0_spec.active  # p = 0 leaves the PC unwrapped: the 'none' path, not the wrapper

    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for nprocs, n, iterations in CASES:
            start = os.getloadavg()[0]
            runs = []
            names = list(VARIANTS)
            for rep in range(args.repeats):
                k = rep % len(names)
                for variant in names[k:] + names[:k]:  # rotate: each variant takes each slot
                    run = one_run(variant, nprocs, n, iterations, rep, Path(tmp))
                    runs.append(run)
                    print(f"P={nprocs} rep {rep} {variant:>8}: {run['solve_max_s']:.4f} s, "
                          f"load {run['load_avg_1min_before']}, "
                          f"foreign {run['foreign_cpu_share']}", file=sys.stderr)
            case = summarise(nprocs, n, iterations, runs, (start, os.getloadavg()[0]))
            cases.append(case)
    inproc = [in_process(case) for case in range(len(IN_PROCESS))]

    result = {
        "benchmark": "noise_overhead",
        "problem": "laplace1d, gmres, jacobi (ksptrace run, one trace per run)",
        "timing": "trace solve_max (PETSc KSPSolve event, slowest rank)",
        "variants": {
            "baseline": "no --noise flag: PC not wrapped",
            "none": "--noise none: PC not wrapped (same code path as baseline)",
            "zero": f"--noise {VARIANTS['zero'][1]}: PC wrapped in the Python DetourPC, "
                    "every detour 0 s (injected_seconds present, all zero)",
        },
        "zero_spec_note": f"'{ZERO_P_SPEC}' is accepted but inactive (p = 0): it leaves the PC "
                          "unwrapped like 'none', so the wrapper is measured with fixed:value=0 "
                          "(p = 1, value 0 s), which is accepted and active",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "cases": cases,
        "in_process": inproc,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for c in cases:
        print(f"P={c['nprocs']} n={c['n']} K={c['iterations']}: load "
              f"{c['load_avg_1min_start']} -> {c['load_avg_1min_end']}, "
              f"{c['runs_foreign_over_10pct']} of {len(c['runs'])} runs over 10% foreign CPU")
        for which in ("all", "clean"):
            part = c[which]
            if part is None:
                print(f"  {which}: fewer than 3 clean repetitions")
                continue
            r, floor = part["ratios"], part["noise_floor"]
            print(f"  {which} (repetitions {part['repetitions']}): zero/baseline "
                  f"{r['zero']['ratio_of_medians']:.4f} (paired "
                  f"{r['zero']['paired_ratio_min_max'][0]:.3f}–"
                  f"{r['zero']['paired_ratio_min_max'][1]:.3f}), "
                  f"{r['zero']['per_iteration_overhead_us']:+.2f} us/iteration "
                  f"({r['zero']['iteration_median_overhead_us']:+.2f} by iteration medians); "
                  f"none/baseline {r['none']['ratio_of_medians']:.4f} "
                  f"(paired {floor[0]:.3f}–{floor[1]:.3f})")
    for c in inproc:
        print(f"in process P={c['nprocs']} n={c['n']} K={c['iterations']}: "
              f"wrapped/plain {c['ratio_median']:.4f} "
              f"(quartiles {c['ratio_quartiles'][0]:.4f}–{c['ratio_quartiles'][1]:.4f}), "
              f"{c['per_iteration_overhead_us']:+.2f} us/iteration; "
              f"load {c['load_avg_1min_start']} -> {c['load_avg_1min_end']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
