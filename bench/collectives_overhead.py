"""Timing overhead of ``ksptrace collectives`` per repetition vs a bare mpi4py loop.

Both loops time the same MPI_Allreduce of the same numpy buffers, barrier-separated, with
``MPI.Wtime`` just before and after the call:

- ``bare``: ``comm.Barrier(); t0 = Wtime(); comm.Allreduce(send, recv, MPI.SUM); t1 = Wtime()``;
- ``harness``: :func:`ksptrace.collectives.bench.time_calls` on the prepared operation (the
  call goes through the prepared closure; the output is reset before and checked after the
  stamps, outside the timed interval).

The two loops alternate in blocks (order rotating) so that drift and the machine's other load
fall on both. Reported per message size: the median of each loop's per-call times, and the
overhead = harness median - bare median (target <= 2 us per call). The wall time per repetition
(including the reset and the check, which are outside the timed interval) is reported beside.

    python bench/collectives_overhead.py [--reps 2000] [--out FILE]   (starts mpiexec -n 2)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from ksptrace.harness.launching.launch import find_mpiexec, is_root
from ksptrace.harness.launching.mpienv import under_mpi_launcher

if __name__ == "__main__" and not under_mpi_launcher():  # start the two ranks ourselves
    mpi = find_mpiexec()
    cmd = mpi.command(2, mpi.flags(2, os.cpu_count() or 1, is_root()),
                      [sys.executable, __file__, *sys.argv[1:]])
    sys.exit(subprocess.run(cmd, check=False).returncode)

import numpy as np
from mpi4py import MPI

from ksptrace.collectives.bench import time_calls
from ksptrace.collectives.operations import prepare

RESULTS = Path(__file__).resolve().parent / "results" / "collectives_overhead.json"
SIZES = (8, 1024, 65536)


def bare(comm: MPI.Comm, nbytes: int, reps: int) -> np.ndarray:
    send = np.ones(max(1, nbytes // 8))
    recv = np.empty_like(send)
    out = np.empty(reps)
    for i in range(reps):
        comm.Barrier()
        t0 = MPI.Wtime()
        comm.Allreduce(send, recv, MPI.SUM)
        t1 = MPI.Wtime()
        out[i] = t1 - t0
    return out


def harness(comm: MPI.Comm, nbytes: int, reps: int) -> np.ndarray:
    times, wrong = time_calls(comm, prepare("allreduce", comm, nbytes), reps, 0, MPI.Wtime)
    if wrong is not None:
        raise RuntimeError(wrong)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    per_block = args.reps // args.blocks
    load_before = os.getloadavg()
    cases = []
    for nbytes in SIZES:
        got: dict[str, list[np.ndarray]] = {"bare": [], "harness": []}
        wall: dict[str, float] = {"bare": 0.0, "harness": 0.0}
        bare(comm, nbytes, 50)  # warm-up
        for b in range(args.blocks):
            for name in (("bare", "harness") if b % 2 == 0 else ("harness", "bare")):
                t0 = time.perf_counter()
                got[name].append(bare(comm, nbytes, per_block) if name == "bare"
                                 else harness(comm, nbytes, per_block))
                wall[name] += time.perf_counter() - t0
        med = {k: float(np.median(np.concatenate(v))) for k, v in got.items()}
        slowest = {k: comm.allreduce(v, op=MPI.MAX) for k, v in med.items()}
        cases.append({
            "bytes": nbytes, "calls_per_loop": per_block * args.blocks,
            "median_us": {k: v * 1e6 for k, v in slowest.items()},
            "overhead_us": (slowest["harness"] - slowest["bare"]) * 1e6,
            "wall_per_rep_us": {k: comm.allreduce(v, op=MPI.MAX) / (per_block * args.blocks)
                                * 1e6 for k, v in wall.items()},
        })
    if comm.Get_rank() == 0:
        doc = {"benchmark": "collectives_overhead", "nprocs": comm.Get_size(),
               "operation": "allreduce (float64, MPI_SUM)", "target_overhead_us": 2.0,
               "statistic": "median per-call time of the slowest rank; overhead = harness - bare",
               "mpi_library": MPI.Get_library_version().splitlines()[0].strip("\x00 "),
               "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
               "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
               "cases": cases}
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
        for c in cases:
            print(f"{c['bytes']:>7} B: bare {c['median_us']['bare']:.2f} us, harness "
                  f"{c['median_us']['harness']:.2f} us, overhead {c['overhead_us']:+.2f} us; "
                  f"wall per rep {c['wall_per_rep_us']['bare']:.1f} / "
                  f"{c['wall_per_rep_us']['harness']:.1f} us")


if __name__ == "__main__":
    main()
