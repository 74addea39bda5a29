"""``ksptrace timeline TRACE.h5 --out FILE.json``: a trace as a timeline to open in Perfetto
(ui.perfetto.dev) or chrome://tracing: one track per rank, grouped per node; a slice per
iteration, inside it the wait in MPI reductions; injected detours marked; solves and their
set-up as parent slices; the run's attributes in the file's ``otherData``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("timeline", allow_abbrev=False)
    p.add_argument("trace", metavar="TRACE", help="trace file (.h5)")
    p.add_argument("--out", required=True, metavar="FILE", help="the timeline to write (.json)")
    p.add_argument("--ranks", metavar="A:B", help="only ranks A to B-1 (default: all)")
    p.add_argument("--iterations", metavar="A:B",
                   help="only iterations A to B-1, counted from 1 (default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing FILE")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ksptrace.trace.timeline import write_timeline

    done = write_timeline(Path(args.trace), Path(args.out), args.ranks, args.iterations,
                          args.overwrite)
    waits = "" if done.waits else "; the trace has no wait times (recorded before them or off)"
    print(f"wrote {done.path} ({done.events} events: ranks {done.ranks.start} to "
          f"{done.ranks.stop - 1}, iterations {done.iterations.start} to "
          f"{done.iterations.stop - 1}{waits})")
    return 0
