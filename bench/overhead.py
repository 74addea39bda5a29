"""Cost of the instrumentation: instrumented vs plain KSPSolve, same process, interleaved repeats.

Run as ``python bench/overhead.py`` (it starts ``mpiexec -n 2`` itself) and writes
``bench/results/overhead.json``. Targets: ratio <= 1.02 at 1e5 unknowns per rank and <= 1.05 at
1e3 unknowns per rank. The ratio is the median over repeats of (instrumented / plain) of
back-to-back solves, the order alternating so that drift cancels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "overhead.json"
NPROCS = 2
CASES = (  # (unknowns per rank, forced iterations, repeats, target ratio)
    (100_000, 300, 15, 1.02),
    (1_000, 2000, 41, 1.05),
)


def measure() -> None:
    import numpy as np

    from ksptrace.harness.monitor import StampMonitor
    from ksptrace.harness.petscenv import init_petsc

    petsc = init_petsc([])
    from mpi4py import MPI

    from ksptrace.problems.laplace1d import build

    comm = petsc.COMM_WORLD
    mpicomm = comm.tompi4py()
    results = []
    for per_rank, iterations, repeats, target in CASES:
        problem = build(comm, per_rank * mpicomm.Get_size(), {})
        kspA, kspB = problem.ksp, petsc.KSP().create(comm=comm)
        kspB.setOperators(kspA.getOperators()[0])
        monitor = StampMonitor(iterations + 1, MPI.Wtime)
        for ksp in (kspA, kspB):
            ksp.setType("gmres")
            ksp.getPC().setType("jacobi")
            ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=iterations)
            ksp.setUp()
        kspA.setMonitor(monitor.callback)

        def timed(ksp: object, problem: object = problem, monitor: object = monitor) -> float:
            problem.reset()  # type: ignore[attr-defined]
            monitor.reset()  # type: ignore[attr-defined]
            mpicomm.Barrier()
            t0 = MPI.Wtime()
            ksp.solve(problem.rhs, problem.solution)  # type: ignore[attr-defined]
            t = MPI.Wtime() - t0
            return float(mpicomm.allreduce(t, op=MPI.MAX))

        timed(kspA)
        timed(kspB)  # warm caches for both
        ratios, with_m, without_m = [], [], []
        for r in range(repeats):
            if r % 2 == 0:
                a, b = timed(kspA), timed(kspB)
            else:
                b, a = timed(kspB), timed(kspA)
            with_m.append(a)
            without_m.append(b)
            ratios.append(a / b)
        ratio = float(np.median(ratios))
        results.append({
            "unknowns_per_rank": per_rank, "nprocs": mpicomm.Get_size(),
            "iterations": iterations, "repeats": repeats,
            "instrumented_median_s": float(np.median(with_m)),
            "plain_median_s": float(np.median(without_m)),
            "ratio_median": ratio,
            "ratio_of_medians": float(np.median(with_m) / np.median(without_m)),
            "ratio_quartiles": [float(np.percentile(ratios, 25)),
                                float(np.percentile(ratios, 75))],
            "per_iteration_overhead_us": float(
                (np.median(with_m) - np.median(without_m)) / iterations * 1e6),
            "target": target,
            "meets_target": ratio <= target,
        })
        kspB.destroy()
        problem.destroy()
    if mpicomm.Get_rank() == 0:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({"benchmark": "overhead", "cases": results}, indent=2) + "\n")
        for c in results:
            print(f"{c['unknowns_per_rank']:>7} unknowns/rank: ratio {c['ratio_median']:.4f} "
                  f"(target {c['target']}), {c['per_iteration_overhead_us']:.2f} us/iteration")


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
