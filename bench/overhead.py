"""What the instrument costs, end to end: ``ksptrace run`` and ``ksptrace.record`` with their
defaults against a bare petsc4py solve with PETSc's event log off (issue 28).

Every measurement is its own ``mpiexec -n P`` process: a bare solve (the same 1-D Laplacian,
GMRES + Jacobi, K forced iterations, ``MPI_Wtime`` around ``KSPSolve``), ``ksptrace run`` (its
trace's ``solve_max``, the same ``MPI_Wtime`` span) and a solve inside ``ksptrace.record``
(``MPI_Wtime`` around the call, as the program sees it). Each round runs the three in a rotated
order, so drift and the order cancel; a round gives one paired ratio per instrument. Per case
(unknowns per rank, P) the median paired ratio over the rounds, its bootstrap 95 % interval and
the extra microseconds per iteration are reported; and the ratio of the fastest process of
each kind, which a process that happens to run slow (10^5 unknowns at P = 2 run either fast or
about 25 % slow, whatever the kind) cannot move.

    python bench/overhead.py [--rounds 15] [--out bench/results/overhead.json]

Targets: run/bare and record/bare <= 1.02 at 10^3 unknowns per rank, <= 1.01 at 10^5.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.harness.petscenv import solver_job_env

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "overhead.json"
CASES = (  # (unknowns per rank, P, forced iterations K, target ratio)
    (1_000, 1, 30_000, 1.02),
    (1_000, 2, 30_000, 1.02),
    (100_000, 1, 600, 1.01),
    (100_000, 2, 600, 1.01),
)
KINDS = ("bare", "run", "record")

SOLVE = """
import json, sys
import petsc4py
petsc4py.init([])
from petsc4py import PETSc
from mpi4py import MPI
from ksptrace.problems import registry
kind, n, k, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, n, {})
ksp = inst.ksp
ksp.setType("gmres")
ksp.getPC().setType("jacobi")
ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=k)
ksp.setUp()
comm = MPI.COMM_WORLD

def timed():
    comm.Barrier()
    t = MPI.Wtime()
    inst.solve()
    return MPI.Wtime() - t

if kind == "record":
    import ksptrace
    with ksptrace.record(ksp, out, comm=comm, overwrite=True):
        seconds = timed()
else:
    seconds = timed()
assert ksp.getIterationNumber() == k, ksp.getIterationNumber()
worst = comm.allreduce(seconds, op=MPI.MAX)
if comm.Get_rank() == 0:
    print(json.dumps({"seconds": worst}))
"""


def _env() -> dict[str, str]:
    return solver_job_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                          PYTHONPATH=str(ROOT))


def measure(kind: str, per_rank: int, nprocs: int, k: int, folder: Path) -> float:
    """Seconds of the timed KSPSolve (slowest rank) of one process of ``kind``."""
    n = per_rank * nprocs
    out = folder / f"{kind}.h5"
    out.unlink(missing_ok=True)
    if kind == "run":
        cmd = [sys.executable, "-m", "ksptrace", "run", "--n", str(n), "--iterations", str(k),
               "--np", str(nprocs), "--out", str(out), "--overwrite"]
    else:
        mpiexec = shutil.which("mpiexec") or "mpiexec"
        cmd = [mpiexec, "-n", str(nprocs), sys.executable, "-c", SOLVE, kind, str(n), str(k),
               str(out)]
    proc = subprocess.run(cmd, env=_env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed: {proc.stderr.strip()[-2000:]}")
    if kind == "run":
        from ksptrace.trace.io import read_trace

        trace = read_trace(out)
        if trace.attr("monitor") != "c":
            raise SystemExit(f"ksptrace run used the {trace.attr('monitor')} monitor")
        return float(trace.solve_max)
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])


def bootstrap(ratios: np.ndarray, draws: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of the median of ``ratios``."""
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(ratios, size=(draws, ratios.size), replace=True), axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(low), float(high)


def run_case(per_rank: int, nprocs: int, k: int, target: float, rounds: int,
             folder: Path) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for r in range(rounds):
        order = KINDS[r % 3:] + KINDS[:r % 3]
        for kind in order:
            seconds[kind].append(measure(kind, per_rank, nprocs, k, folder))
    bare = np.array(seconds["bare"])
    case: dict[str, Any] = {"unknowns_per_rank": per_rank, "nprocs": nprocs, "iterations": k,
                            "rounds": rounds, "target": target,
                            "bare_median_s": float(np.median(bare))}
    for kind in ("run", "record"):
        inst = np.array(seconds[kind])
        ratios = inst / bare
        low, high = bootstrap(ratios)
        median = float(np.median(ratios))
        case[kind] = {
            "median_ratio": median, "ci95": [low, high],
            "ratio_of_minima": float(inst.min() / bare.min()),
            "us_per_iteration": float(np.median(inst - bare)) / k * 1e6,
            "met": median <= target, "seconds": seconds[kind],
        }
    case["bare"] = {"seconds": seconds["bare"]}
    return case


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    load_before = os.getloadavg()
    started = time.time()
    cases = []
    with tempfile.TemporaryDirectory(prefix="ksptrace-overhead-") as tmp:
        for per_rank, nprocs, k, target in CASES:
            case = run_case(per_rank, nprocs, k, target, args.rounds, Path(tmp))
            cases.append(case)
            for kind in ("run", "record"):
                c = case[kind]
                print(f"{kind:6}/bare  {per_rank:>7} per rank  P={nprocs}  "
                      f"{c['median_ratio']:.4f} [{c['ci95'][0]:.4f}, {c['ci95'][1]:.4f}]  "
                      f"{c['us_per_iteration']:+.3f} us/it  minima {c['ratio_of_minima']:.4f}  "
                      f"target {target}  "
                      f"{'met' if c['met'] else 'MISSED'}", flush=True)
    result = {
        "what": "ksptrace run and ksptrace.record end to end against a bare petsc4py solve "
                "with the event log off; separate processes, rotated order per round",
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "cpu_count": os.cpu_count(), "minutes": (time.time() - started) / 60,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cases": cases,
        "all_met": all(c[k]["met"] for c in cases for k in ("run", "record")),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"load {load_before[0]:.2f} -> {result['loadavg_after'][0]:.2f}; "
          f"{'all targets met' if result['all_met'] else 'some targets MISSED'}; {args.out}")
    return 0 if result["all_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
