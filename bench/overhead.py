"""What the instrument costs, end to end: ``ksptrace run`` and ``ksptrace.record`` with their
defaults against a bare petsc4py solve with PETSc's event log off (issue 28).

Every measurement is its own process: a bare solve (the same 1-D Laplacian, GMRES + Jacobi, K
forced iterations, ``MPI_Wtime`` around ``KSPSolve``), ``ksptrace run`` (its trace's
``solve_max``, the same ``MPI_Wtime`` span) and a solve inside ``ksptrace.record``
(``MPI_Wtime`` around the call, as the program sees it).

This machine's speed drifts by 10-30 % over seconds (one process's 10^5-unknown solves, back to
back: 0.75 to 1.04 s), more than the 1-2 % to be shown. Each pair is therefore measured in
turn as **bare, X, X, bare** (then X, bare, bare, X), so that a drift linear over the four
cancels; the pair's ratio is (X1 + X2) / (B1 + B2). (Running the two side by side, one per
core, was tried: with the solves overlapping, the two cores slow each other unevenly, and the
intervals grew to [1.01, 1.27].) ``bench/instructions.py`` measures the same ratios in
instructions, which drift does not touch.

Per case (unknowns per rank, P) and instrument: the median paired ratio over the rounds, its
bootstrap 95 % interval, and the extra microseconds per iteration.

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

from ksptrace.harness.petsc.petscenv import solver_job_env

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
import ksptrace  # every kind alike
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


def _command(kind: str, per_rank: int, nprocs: int, k: int, out: Path) -> list[str]:
    n = str(per_rank * nprocs)
    if kind == "run":
        return [sys.executable, "-m", "ksptrace", "run", "--n", n, "--iterations", str(k),
                "--np", str(nprocs), "--out", str(out), "--overwrite"]
    return [shutil.which("mpiexec") or "mpiexec", "-n", str(nprocs), sys.executable, "-c",
            SOLVE, kind, n, str(k), str(out)]


def _seconds(kind: str, proc: subprocess.CompletedProcess[str], out: Path) -> float:
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed: {proc.stderr.strip()[-2000:]}")
    if kind == "run":
        from ksptrace.trace.io import read_trace

        trace = read_trace(out)
        if trace.attr("monitor") != "c":
            raise SystemExit(f"ksptrace run used the {trace.attr('monitor')} monitor")
        return float(trace.solve_max)
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])


def measure(kind: str, per_rank: int, nprocs: int, k: int, folder: Path) -> float:
    """Seconds of the timed KSPSolve (slowest rank) of one process of ``kind``."""
    out = folder / f"{kind}.h5"
    out.unlink(missing_ok=True)
    proc = subprocess.run(_command(kind, per_rank, nprocs, k, out), env=_env(), cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    return _seconds(kind, proc, out)


def bootstrap(ratios: np.ndarray, draws: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of the median of ``ratios``."""
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(ratios, size=(draws, ratios.size), replace=True), axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(low), float(high)


def run_case(per_rank: int, nprocs: int, k: int, target: float, rounds: int,
             folder: Path) -> dict[str, Any]:
    pairs: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS[1:]}
    for r in range(rounds):
        for kind in (KINDS[1:] if r % 2 == 0 else KINDS[:0:-1]):
            order = ("bare", kind, kind, "bare") if r % 2 == 0 else (kind, "bare", "bare", kind)
            timed = [(which, measure(which, per_rank, nprocs, k, folder)) for which in order]
            pairs[kind].append((sum(t for w, t in timed if w == "bare"),
                                sum(t for w, t in timed if w == kind)))
    case: dict[str, Any] = {"unknowns_per_rank": per_rank, "nprocs": nprocs, "iterations": k,
                            "rounds": rounds, "target": target,
                            "pairing": "bare, X, X, bare in turn (sums)"}
    for kind, got in pairs.items():
        bare, inst = np.array([b for b, _ in got]), np.array([i for _, i in got])
        ratios = inst / bare
        low, high = bootstrap(ratios)
        median = float(np.median(ratios))
        per_pair = 2
        case[kind] = {
            "median_ratio": median, "ci95": [low, high],
            "us_per_iteration": float(np.median(inst - bare)) / per_pair / k * 1e6,
            "bare_median_s": float(np.median(bare)) / per_pair,
            "met": median <= target, "pairs": got,
        }
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
                      f"{c['us_per_iteration']:+.3f} us/it  target {target}  "
                      f"{'met' if c['met'] else 'MISSED'}", flush=True)
    result: dict[str, Any] = {
        "what": "ksptrace run and ksptrace.record end to end against a bare petsc4py solve "
                "with the event log off; separate processes, bare-X-X-bare in turn",
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
