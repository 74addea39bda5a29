"""What PETSc's event log costs per iteration: off, only the two events ksptrace reads, all;
and the whole instrument of ``ksptrace run`` (the two events and the C stamping monitor).

Each mode runs in its own ``mpiexec -n P`` process (GMRES + Jacobi on the 1-D Laplacian, K
forced iterations, the minimum of 3 solves in the process), the modes interleaved, ``--pairs``
processes each; the median and the minimum microseconds per iteration of each mode and their
ratios to "off" (at P = 2 a process is either fast or about 10 % slow, whatever the mode, so
the minima compare like with like).

    python bench/logcost.py [--pairs 6] [--out bench/results/logcost.json]

The same difference in instructions, which no load disturbs (callgrind, P = 1, 10^3 unknowns;
GMRES, K = 3000 minus K = 1000, three solves each): off 169,500 instructions per iteration,
only the two events +253, all events +5,770.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ksptrace.harness.petsc.petscenv import solver_job_env

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "logcost.json"
MODES = ("off", "only", "all", "instrument")
"""``instrument``: what ``ksptrace run`` adds to the timed solve, the two events and the C
stamping monitor."""
CASES = ((1, 1_000, 30_000), (2, 2_000, 30_000))  # (P, unknowns, K): 10^3 per rank

PROGRAM = """
import json, sys
import petsc4py
petsc4py.init([])
from petsc4py import PETSc
from mpi4py import MPI
from ksptrace.harness.monitoring import eventlog
from ksptrace.problems import registry
mode, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, n, {})
ksp = inst.ksp
ksp.setType("gmres"); ksp.getPC().setType("jacobi")
ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=k)
inst.prepare()
if mode == "all":
    PETSc.Log.begin()
elif mode == "only":
    eventlog.keep_only_needed(PETSc)
elif mode == "instrument":
    from ksptrace.harness.monitoring.monitor import StampMonitor
    monitor = StampMonitor(k + 1, MPI.Wtime)
    assert monitor.attach(ksp) == "c"
    eventlog.keep_only_needed(PETSc)
best = float("inf")
for _ in range(3):
    inst.reset()
    MPI.COMM_WORLD.Barrier()
    t = MPI.Wtime(); inst.solve(); t = MPI.COMM_WORLD.allreduce(MPI.Wtime() - t, op=MPI.MAX)
    best = min(best, t)
if MPI.COMM_WORLD.Get_rank() == 0:
    print(json.dumps({"us_per_iteration": best / k * 1e6}))
"""


def one(mode: str, nprocs: int, n: int, k: int) -> float:
    cmd = [shutil.which("mpiexec") or "mpiexec", "-n", str(nprocs), sys.executable, "-c",
           PROGRAM, mode, str(n), str(k)]
    env = solver_job_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                         PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed: {proc.stderr.strip()[-2000:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["us_per_iteration"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    load = os.getloadavg()
    cases = []
    for nprocs, n, k in CASES:
        us: dict[str, list[float]] = {m: [] for m in MODES}
        for p in range(args.pairs):
            for mode in MODES[p % len(MODES):] + MODES[:p % len(MODES)]:
                us[mode].append(one(mode, nprocs, n, k))
        med = {m: float(np.median(v)) for m, v in us.items()}
        low = {m: float(np.min(v)) for m, v in us.items()}
        case = {"nprocs": nprocs, "unknowns_per_rank": n // nprocs, "iterations": k,
                "us_per_iteration": us, "median_us": med, "min_us": low,
                "ratio_to_off": {m: med[m] / med["off"] for m in MODES},
                "ratio_of_minima": {m: low[m] / low["off"] for m in MODES}}
        cases.append(case)
        print(f"P={nprocs}, {n // nprocs} per rank, median (minimum) us/it and ratio to off: "
              + ", ".join(f"{m} {med[m]:.3f} ({low[m]:.3f}) {med[m] / med['off']:.4f} "
                          f"({low[m] / low['off']:.4f})" for m in MODES), flush=True)
    result = {"loadavg_before": load, "loadavg_after": os.getloadavg(),
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": cases}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"load {load[0]:.2f} -> {result['loadavg_after'][0]:.2f}; {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
