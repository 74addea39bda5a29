"""``ksptrace segment TRACES... --out DIR``: segmentation of campaign results over process counts.

This module only parses, reads and prints: the report itself is
:mod:`ksptrace.studies.segmentation.series`. Bad traces (the reader's checks, the same as
``analyze``'s) are named once each on stderr and skipped; the command fails only when none is
left. The report folder is written whole or not at all (:func:`ksptrace.outputs.staged_directory`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ksptrace.errors import TraceError, UsageError
from ksptrace.outputs import check_destination, staged_directory
from ksptrace.studies.segmentation.choices import METRIC_NAMES

if TYPE_CHECKING:
    from ksptrace.trace.model import Trace


def register(sub: Any) -> None:
    p = sub.add_parser(
        "segment",
        allow_abbrev=False,
    )
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files (any P, any solver)")
    p.add_argument("--out", type=Path, required=True, help="report folder (created)")
    p.add_argument("--paper", action="store_true", help="the detector exactly as published")
    p.add_argument(
        "--criterion",
        choices=("smape", "rss"),
        default="smape",
        help="leave-one-out model selection cost (default smape, as Extra-P)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument(
        "--reduce",
        choices=("min", "median"),
        default="min",
        help="how repetitions at one P become one value (default min: interference only adds "
        "time; see docs/segmentation.md)",
    )
    p.add_argument(
        "--metrics",
        default=",".join(METRIC_NAMES),
        help=f"comma-separated metrics to model (default: all of {', '.join(METRIC_NAMES)})",
    )
    p.set_defaults(func=main)


def _metrics(text: str) -> tuple[str, ...]:
    known = list(METRIC_NAMES)
    metrics = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in metrics if m not in known]
    if unknown or not metrics:
        raise UsageError(
            f"unknown metric(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}"
        )
    return metrics


def read_good(paths: list[str | os.PathLike[str]]) -> list[Trace]:
    """The traces that pass the reader's checks; each bad one is named once on stderr."""
    from ksptrace.trace.read import iter_traces  # h5py: not for --help

    traces: list[Trace] = []
    for item in iter_traces(paths):
        if isinstance(item, TraceError):
            print(f"ksptrace: skipped {item}", file=sys.stderr)
        else:
            traces.append(item)
    if not traces:
        raise TraceError(
            f"no trace could be read ({len(paths)} skipped, each named above); "
            "give at least one valid trace"
        )
    return traces


EARLIER = ("segment.json",)
"""A folder holding this is an earlier segment report (from before outputs.MARKER existed)."""


def main(args: argparse.Namespace) -> int:
    from ksptrace.report.segmentation import write_segment_report  # matplotlib
    from ksptrace.studies.segmentation.segment import SegmentationParams  # numpy

    params = SegmentationParams.paper() if args.paper else SegmentationParams()
    if args.criterion != params.criterion:
        params = SegmentationParams(**{**params.__dict__, "criterion": args.criterion})
    metrics = _metrics(args.metrics)
    out: Path = args.out
    check_destination(out, EARLIER)
    traces = read_good(list(args.traces))
    with staged_directory(out, EARLIER) as folder:
        report = write_segment_report(
            folder, traces, params, metrics, plots=not args.no_plots, reduce=args.reduce
        )
    for text in report.texts:
        print(text)
    print(f"report: {out / 'segment.md'}, {out / 'segment.html'}, {out / 'segment.json'}")
    return 0
