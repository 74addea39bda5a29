"""``ksptrace analyze TRACES... --out DIR``: the analysis report of a set of traces.

Bad traces (corrupt, truncated, newer schema, NaN or inf timings) are named in one line on
stderr and skipped; the rest are analysed. With nothing left, the command fails.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, TextIO

from scipy.integrate import IntegrationWarning

from ksptrace.analysis.fitting import DEFAULT_CANDIDATES
from ksptrace.analysis.pipeline import INDEPENDENT_UNITS, AnalysisOptions
from ksptrace.analysis.report import Skipped, write_report
from ksptrace.errors import TraceError
from ksptrace.trace.io import read_trace
from ksptrace.trace.model import Trace


class ProgressBar:
    """A one-line text progress bar on a stream (stderr)."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.last = ""
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last_step = ""

    def __call__(self, step: str, fraction: float) -> None:
        if not self.tty:  # a log file gets one line per step, not a redrawn bar
            if step != self.last_step:
                self.stream.write(f"{step}\n")
                self.stream.flush()
                self.last_step = step
            return
        filled = round(self.width * max(0.0, min(1.0, fraction)))
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {step}"[:120]
        if line != self.last:
            self.stream.write("\r" + line.ljust(len(self.last)))
            self.stream.flush()
            self.last = line

    def close(self) -> None:
        if self.tty and self.last:
            self.stream.write("\n")
            self.stream.flush()


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="analyse traces: variability statistics, runtime models, figures, HTML report",
        description=__doc__,
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files (.h5)")
    p.add_argument("--out", required=True, help="directory for report.html, CSVs, summary.json")
    p.add_argument("--alpha", type=float, default=0.05, help="KS significance level")
    p.add_argument("--reference-rank", type=int, default=0, help="rank tested against all others")
    p.add_argument(
        "--candidates",
        default=",".join(DEFAULT_CANDIDATES),
        help="comma-separated scipy.stats families to fit",
    )
    p.add_argument(
        "--fit-size",
        type=int,
        default=10_000,
        help="fit on a random subsample of this many values (0: all)",
    )
    p.add_argument(
        "--independent",
        choices=INDEPENDENT_UNITS,
        default="nodes",
        help="independent units in the max: nodes (P/ranks-per-node) or ranks (P)",
    )
    p.add_argument(
        "--keep-fill",
        action="store_true",
        help="keep pipelined GMRES's pipeline-fill iterations in bulk statistics",
    )
    p.add_argument("--mc-runs", type=int, default=16, help="Monte Carlo runs per trace")
    p.add_argument("--seed", type=int, default=0, help="seed of subsampling and Monte Carlo")
    p.add_argument(
        "--iteration",
        type=int,
        default=None,
        help="iteration for per-iteration node variances (default: mid-cycle)",
    )
    p.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=main)


def read_all(paths: list[str], stream: TextIO) -> tuple[list[Trace], list[Skipped]]:
    traces: list[Trace] = []
    skipped: list[Skipped] = []
    for path in paths:
        try:
            traces.append(read_trace(path))
        except TraceError as exc:
            skipped.append(Skipped(path, str(exc)))
            print(f"ksptrace: skipped {exc}", file=stream)
    return traces, skipped


def main(args: argparse.Namespace) -> int:
    options = AnalysisOptions(
        alpha=args.alpha,
        reference_rank=args.reference_rank,
        candidates=tuple(c.strip() for c in args.candidates.split(",") if c.strip()),
        fit_size=args.fit_size or None,
        independent=args.independent,
        drop_fill=not args.keep_fill,
        mc_runs=args.mc_runs,
        seed=args.seed,
        iteration=args.iteration,
    )
    traces, skipped = read_all(args.traces, sys.stderr)
    bar = None if args.quiet else ProgressBar(sys.stderr)

    def on_skip(s: Skipped) -> None:
        if bar is not None:
            bar.close()
            bar.last = ""
        print(f"ksptrace: skipped {s.path}: {s.reason}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            # scipy's optimisers and quadratures warn on hard fits; the report says what failed.
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", IntegrationWarning)
            report = write_report(
                args.out, traces, skipped, options, bar, not args.no_figures, on_skip
            )
    finally:
        if bar is not None:
            bar.close()
    print(f"wrote {report.html} ({report.analysed} traces analysed, {len(report.skipped)} skipped)")
    return 0
