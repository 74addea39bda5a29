"""``ksptrace segment-eval``: the synthetic evaluation of the segmentation detector (paper §4.1)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from ksptrace.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "segment-eval",
        allow_abbrev=False,
    )
    p.add_argument(
        "--series",
        type=int,
        default=1000,
        help="series per cell and truth (segmented and not); default 1000",
    )
    p.add_argument(
        "--split-series",
        type=int,
        default=None,
        help="series per cell of the 6-10 point table (default: --series)",
    )
    p.add_argument(
        "--split-noise",
        type=float,
        default=0.05,
        help="relative noise of the point-count table (default 0.05)",
    )
    p.add_argument("--seed", type=int, default=2017, help="random seed (default 2017)")
    p.add_argument(
        "--paper",
        action="store_true",
        help="the detector exactly as published (no two-sided test, refinement or global split)",
    )
    p.add_argument("--no-splits", action="store_true", help="skip the 6-10 point table")
    p.add_argument("--json", type=Path, default=None, help="write all cells and figures here")
    p.add_argument("--markdown", type=Path, default=None, help="write the tables here")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    import numpy as np  # the study: not for --help

    from ksptrace.studies.segmentation import evaluation as ev
    from ksptrace.studies.segmentation import synthetic as syn
    from ksptrace.studies.segmentation.segment import SegmentationParams

    if args.series < 10:
        raise UsageError(f"--series {args.series} is too few for percentages; use at least 10")
    split_series = args.split_series or args.series
    params = SegmentationParams.paper() if args.paper else SegmentationParams()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    noise_cells = list(ev.noise_table(rng, args.series, params))
    split_cells = (
        []
        if args.no_splits
        else list(ev.split_table(rng, split_series, params, noise=args.split_noise))
    )
    seconds = time.perf_counter() - t0
    summary = ev.summarize(noise_cells)
    met = ev.meets_targets(summary)
    variant = (
        "paper"
        if args.paper
        else "ksptrace default (two-sided relative nRSS, refined split, global split)"
    )
    text = [
        f"detector: {variant}; seed {args.seed}; {seconds:.1f} s",
        "",
        "### Ten points, split 5/5, by noise level",
        "",
        ev.noise_markdown(noise_cells),
        "",
        "### Acceptance figures (noise table)",
        "",
        ev.summary_markdown(summary),
        "",
        "targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in met.items()),
    ]
    if split_cells:
        text += [
            "",
            f"### 6-10 points, every split, noise {100 * args.split_noise:.0f}%",
            "",
            ev.split_markdown(split_cells),
        ]
    rendered = "\n".join(text) + "\n"
    print(rendered, end="")
    if args.markdown is not None:
        args.markdown.write_text(rendered)
    if args.json is not None:
        args.json.write_text(json.dumps({
            "detector": "paper" if args.paper else "default",
            "params": {k: getattr(params, k) for k in params.__dataclass_fields__},
            "seed": args.seed, "seconds": round(seconds, 2), "summary": summary,
            "targets": ev.TARGETS, "targets_met": met,
            "generator": {"c0_range": syn.C0_RANGE, "c1_range": syn.C1_RANGE,
                          "min_departure": syn.MIN_DEPARTURE, "joins": list(ev.JOINS)},
            "noise_table": [c.as_dict() for c in noise_cells],
            "split_table": [c.as_dict() for c in split_cells],
        }, indent=1) + "\n")  # fmt: skip
    return 0
