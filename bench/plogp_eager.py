"""Where do PLogP's o_s, o_r and g change near Open MPI's eager limit? (issue 54)

``ksptrace collectives --op plogp`` measures powers of two, so a change between 2 and 4 KiB
cannot be placed closer than one size. This measures the same quantities (``time_plogp``: rounds
over every size, burst medians, the gap as the slope of trains) at sizes spaced 512 B apart from
1 to 8 KiB, with 4000-4090 B beside 4096 (a message plus its header crosses the 4 KiB limit
between them), and prints each function's per-size median and 95 % interval, pooled over both
ranks. A protocol step shows as a jump between neighbouring sizes that stands out of their
intervals.

    python bench/plogp_eager.py [--rounds 30] [--timing c|python] [--out FILE]
                                                              (starts mpiexec -n 2)

``--timing`` sets ``KSPTRACE_PLOGP_TIMING`` (default: the C kernel where it can be built); the
result says which path timed it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from ksptrace.harness.launching.launch import find_mpiexec, is_root
from ksptrace.harness.launching.mpienv import under_mpi_launcher

if __name__ == "__main__" and not under_mpi_launcher():  # start the two ranks ourselves
    if "--timing" in sys.argv[:-1]:
        os.environ["KSPTRACE_PLOGP_TIMING"] = sys.argv[sys.argv.index("--timing") + 1]
    mpi = find_mpiexec()
    cmd = mpi.command(2, mpi.flags(2, os.cpu_count() or 1, is_root()),
                      [sys.executable, __file__, *sys.argv[1:]])
    sys.exit(subprocess.run(cmd, check=False).returncode)

import numpy as np

from ksptrace.collectives.plogp import time_plogp
from ksptrace.studies.collectives.persize import summarize

RESULTS = Path(__file__).resolve().parent / "results" / "plogp_eager.json"
SIZES = tuple(sorted({*range(1024, 8193, 512), 4000, 4050, 4080, 4090}))


def main() -> None:
    from mpi4py import MPI

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--timing", choices=("auto", "c", "python"), default="auto",
                        help="the path that times the exchanges (KSPTRACE_PLOGP_TIMING)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    load = os.getloadavg()[0]
    times, wrong = time_plogp(comm, SIZES, args.rounds, 3, MPI.Wtime)
    if wrong is not None:
        raise SystemExit(f"rank {comm.Get_rank()}: {wrong}")
    mine = {"o_s": times.send_overhead, "o_r": times.recv_overhead, "g": times.gap,
            "rtt/2": times.half_round_trip}
    gathered = comm.gather(mine, root=0)
    if comm.Get_rank() != 0 or gathered is None:
        return
    out: dict[str, object] = {"benchmark": "plogp_eager", "rounds": args.rounds,
                              "sizes": list(SIZES), "loadavg_before": load,
                              "loadavg_after": os.getloadavg()[0],
                              "timing": times.timing, "timing_note": times.timing_note,
                              "ompi_mca_env": {k: v for k, v in os.environ.items()
                                               if k.startswith("OMPI_MCA_")},
                              "mpi_library": MPI.Get_library_version().splitlines()[0]}
    print(f"timed in {times.timing}; load {load:.1f}; median [95 % interval] in us, both ranks "
          "pooled")
    for name in mine:
        s = summarize(np.concatenate([g[name] for g in gathered], axis=1))
        out[name] = {"median_us": (s.median * 1e6).round(4).tolist(),
                     "low_us": (s.low * 1e6).round(4).tolist(),
                     "high_us": (s.high * 1e6).round(4).tolist()}
        print(f"{name:>5}: " + "  ".join(
            f"{m}: {v * 1e6:.2f} [{lo * 1e6:.2f}, {hi * 1e6:.2f}]"
            for m, v, lo, hi in zip(SIZES, s.median, s.low, s.high, strict=True)))
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
