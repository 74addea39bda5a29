"""``ksptrace decide CAMPAIGN_DIR --axes nprocs,n --method ksp --out DIR``: decision maps.

Reads every trace under the given folders (or the given trace files), takes each run's
KSPSolve time (slowest rank) and builds, per group of runs that agree on everything but the two
axes and the method, the map of the fastest method per cell and its quadtrees. Writes, whole or
not at all: decision.html, decision.json, per map the depth and threshold tables, the regions and
every cell as CSV, the figures, the decision function as C and Python, and a PETSc options file
per region (for --method ksp or pc).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ksptrace.cli.progress import Progress
from ksptrace.errors import AnalysisError, TraceError, UsageError
from ksptrace.studies.decisions.defaults import DEFAULT_AXES, DEFAULT_METHOD
from ksptrace.trace.ompi import parse_ompi_algorithms


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "decide",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="+", metavar="CAMPAIGN_DIR",
                   help="campaign output folders (searched for *.h5) or trace files")
    p.add_argument("--axes", default=",".join(DEFAULT_AXES),
                   help="the two numeric axes, as the campaign file spells them "
                        "(default: nprocs,n)")
    p.add_argument("--method", default=DEFAULT_METHOD,
                   help="the categorical key whose values are compared (default: ksp)")
    p.add_argument("--out", required=True, help="folder for decision.html and the files")
    p.add_argument("--max-depth", type=int, default=None,
                   help="depth limit of the tree the code and options are written from "
                        "(default: none, the exact tree)")
    p.add_argument("--threshold", type=float, default=1.0,
                   help="accuracy threshold of that tree, a share in (0, 1] (default 1)")
    p.add_argument("--ompi-rules", metavar="COLLECTIVE", default=None,
                   help="also write an Open MPI tuned rules file for COLLECTIVE (e.g. allreduce), "
                        "for maps over communicator size x message size in bytes whose methods "
                        "are Open MPI algorithm names (from ompi_info) or numbers")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=main)


def trace_paths(inputs: list[str]) -> list[Path]:
    """Trace files named, and every *.h5 under the folders named (sorted)."""
    paths: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.h5") if q.is_file())
            if not found:
                raise UsageError(f"{p} holds no trace (*.h5); pass a campaign's output folder")
            paths.extend(found)
        elif p.exists():  # a file that is no regular file is named by the reader, and skipped
            paths.append(p)
        else:
            raise UsageError(f"{p} does not exist; pass a campaign output folder or trace files")
    return paths


def ompi_algorithms(collective: str) -> dict[str, int]:
    """Algorithm names of ``collective`` from this machine's ``ompi_info`` (empty without Open
    MPI: method labels must then be algorithm numbers)."""
    if shutil.which("ompi_info") is None:
        return {}
    try:
        info = subprocess.run(["ompi_info", "--param", "coll", "tuned", "--level", "9"],
                              capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    try:
        return parse_ompi_algorithms(info, collective)
    except AnalysisError:
        return {}


def collective_runs(paths: list[Path], skipped: list[str], progress: Progress) -> list[Any]:
    """Runs of collectives traces: one per message size (axes nprocs, bytes; method
    algorithm or algorithm_name; each operation its own map)."""
    from ksptrace.studies.collectives.report import decision_runs
    from ksptrace.trace import collectives

    runs: list[Any] = []
    for p in paths:
        try:
            runs += decision_runs(collectives.read(p), str(p))
            progress.advance(str(p))
        except TraceError as exc:
            skipped.append(str(exc))
            progress.advance(str(p), f"skipped: {exc}")
    return runs


def main(args: argparse.Namespace) -> int:
    # the study (numpy, pandas, matplotlib, h5py) is imported here, not for --help
    from ksptrace.report.decisions import write_decision
    from ksptrace.studies.decisions.files import runs_from
    from ksptrace.trace.collectives import collectives_flags
    from ksptrace.trace.read import iter_traces

    axes = tuple(a.strip() for a in args.axes.split(",") if a.strip())
    if len(axes) != 2:
        raise UsageError(f"--axes takes two keys separated by a comma, got {args.axes!r} "
                         "(for example nprocs,n)")
    rules = None if args.ompi_rules is None else (args.ompi_rules,
                                                  ompi_algorithms(args.ompi_rules))
    paths = trace_paths(list(args.inputs))
    collective_paths = [p for p, yes in zip(paths, collectives_flags(paths), strict=True) if yes]
    with Progress(len(paths), "trace", sys.stderr, enabled=not args.quiet) as progress:
        def items() -> Any:
            for item in iter_traces([p for p in paths if p not in collective_paths]):
                name = getattr(item, "path", None) or str(item).split(": ", 1)[0]
                progress.advance(str(name), "ok" if not isinstance(item, Exception)
                                 else "skipped: " + str(item))
                yield item

        runs, skipped, ranked = runs_from(items())
        runs += collective_runs(collective_paths, skipped, progress)
        for reason in skipped:
            if args.quiet:
                print(f"ksptrace: skipped {reason}", file=sys.stderr)
        progress.step("quadtrees, figures and code")
        folder, studies, result = write_decision(
            args.out, runs, (axes[0], axes[1]), args.method, args.max_depth, args.threshold,
            skipped, rules, ranked)
    for note in studies.notes:
        print(f"ksptrace: {note}", file=sys.stderr)
    for s, part in zip(studies.studies, result.parts, strict=True):
        zero = s.single
        print(f"{s.title}: {s.dm.axis1.size} x {s.dm.axis2.size} cells, "
              f"{len(s.dm.methods)} methods; exact tree {s.exact.tree.stats.leaves} leaves, "
              f"depth {s.exact.tree.stats.max_depth}; one method for all: "
              + (f"{100 * zero.penalty.mean:+.1f} % mean penalty" if not zero.penalty.unknown
                 else f"cannot tell ({zero.penalty.text()})"))
        print(f"  {part.findings[0]}")
    print(f"wrote {folder / 'decision.html'} ({len(studies.studies)} map(s) from "
          f"{len(runs) - studies.left_out} runs; {studies.left_out} "
          f"run{'s' if studies.left_out != 1 else ''} left out, "
          f"{len(skipped)} skipped (unreadable))")
    return 0
