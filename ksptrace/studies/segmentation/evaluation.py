"""The synthetic evaluation of the segmentation detector: cells, tables and acceptance figures.

A cell runs the detector on ``series`` unsegmented series and ``series`` segmented ones (half
with a jump, half with a continuous join; see :mod:`ksptrace.studies.segmentation.synthetic`). It
counts correct (segmented <=> truly segmented), false positives (flagged among the
unsegmented), false negatives (missed among the segmented, also per join) and located (among
the true positives, the change point found where it is, see ``segment_synthetic.located``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ksptrace.studies.segmentation.segment import (
    SegmentationParams,
    detect_many,
    model_segments_many,
)
from ksptrace.studies.segmentation.synthetic import (
    NOISE_LEVELS,
    Join,
    Space,
    Spacing,
    located,
    make_batch,
)

JOINS: tuple[Join, ...] = ("jump", "continuous")

TARGETS = {"overall_correct_pct": 93.0, "spacing_correct_pct": 90.0, "fp_pct_noise_le_5": 1.0,
           "located_pct": 95.0}  # fmt: skip
"""The acceptance targets (issue 15): overall, per spacing, per cell at noise <= 5 %, pooled."""


@dataclass(frozen=True)
class Cell:
    """The outcome of one evaluation cell (percentages; NaN where nothing was counted)."""

    space: Space
    spacing: Spacing
    noise: float
    n1: int
    n2: int
    series: int
    """Unsegmented series; as many segmented ones (0 when n1 or n2 is 0)."""
    false_positive: float
    false_negative: dict[Join, float]
    located: dict[Join, float]
    true_positives: dict[Join, int]

    @property
    def fn(self) -> float:
        return float(np.mean(list(self.false_negative.values())))

    @property
    def correct(self) -> float:
        if not self.false_negative:
            return 100.0 - self.false_positive
        return 100.0 - (self.false_positive + self.fn) / 2

    def correct_for(self, join: Join) -> float:
        return 100.0 - (self.false_positive + self.false_negative[join]) / 2

    @property
    def located_all(self) -> float:
        tp = sum(self.true_positives.values())
        if tp == 0:
            return float("nan")
        return sum(self.located[j] * self.true_positives[j] for j in self.located) / tp

    def as_dict(self) -> dict[str, object]:
        return {
            "space": self.space, "spacing": self.spacing, "noise": self.noise,
            "n1": self.n1, "n2": self.n2, "series": self.series,
            "correct_pct": round(self.correct, 2),
            "false_positive_pct": round(self.false_positive, 2),
            "false_negative_pct": {j: round(v, 2) for j, v in self.false_negative.items()},
            "located_pct": {j: round(v, 2) for j, v in self.located.items()},
            "true_positives": dict(self.true_positives),
        }  # fmt: skip


def evaluate_cell(
    rng: np.random.Generator,
    series: int,
    space: Space,
    spacing: Spacing,
    noise: float,
    n1: int,
    n2: int,
    params: SegmentationParams | None = None,
    with_models: bool = False,
) -> Cell:
    """Run the detector on ``series`` unsegmented and ``series`` segmented series."""
    clean = make_batch(rng, series, space, spacing, noise, n1 + n2, 0, segmented=False)
    fp = float(detect_many(clean.p, clean.y, params).segmented.mean() * 100)
    fn: dict[Join, float] = {}
    loc: dict[Join, float] = {}
    tps: dict[Join, int] = {}
    if n1 > 0 and n2 > 0:
        for k, join in enumerate(JOINS):
            size = series // 2 + (series % 2 if k == 0 else 0)
            seg = make_batch(rng, size, space, spacing, noise, n1, n2, True, join)
            det = detect_many(seg.p, seg.y, params)
            if with_models:
                model_segments_many(seg.y, det, params)
            tp = det.segmented
            fn[join] = float((~tp).mean() * 100)
            tps[join] = int(tp.sum())
            hit = located(det.lo[tp], det.hi[tp], n1, join)
            loc[join] = float(hit.mean() * 100) if tp.any() else float("nan")
    return Cell(space, spacing, noise, n1, n2, series, fp, fn, loc, tps)


def noise_table(
    rng: np.random.Generator,
    series: int,
    params: SegmentationParams | None = None,
    levels: Sequence[float] = NOISE_LEVELS,
) -> Iterator[Cell]:
    """Ten points split 5/5, every space x spacing x noise level."""
    for spacing in ("linear", "geometric"):
        for space in ("in", "out"):
            for level in levels:
                yield evaluate_cell(rng, series, space, spacing, level, 5, 5, params)


def split_table(
    rng: np.random.Generator,
    series: int,
    params: SegmentationParams | None = None,
    noise: float = 0.05,
    sizes: Sequence[int] = (6, 7, 8, 9, 10),
) -> Iterator[Cell]:
    """6-10 points with every split n1/n2 (n1, n2 >= 1), at one noise level."""
    for spacing in ("linear", "geometric"):
        for space in ("in", "out"):
            for n in sizes:
                for n1 in range(1, n):
                    yield evaluate_cell(rng, series, space, spacing, noise, n1, n - n1, params)


def _located(cells: Sequence[Cell], joins: Sequence[Join] = JOINS) -> float:
    tp = sum(c.true_positives[j] for c in cells for j in joins)
    hit = sum(c.located[j] * c.true_positives[j] / 100 for c in cells for j in joins
              if c.true_positives[j])  # fmt: skip
    return round(100 * hit / max(tp, 1), 2)


def summarize(cells: Sequence[Cell]) -> dict[str, dict[str, float]]:
    """The acceptance figures of the noise table (ten points, 5/5), per spacing and overall.

    correct: mean % correct over the cells (also per join); fp_max_pct_noise_le_5: the largest
    false-positive % of a cell at noise <= 5 %; located: % of true positives located, pooled
    over the cells (also per join and per space), and the worst cell's.
    """
    out: dict[str, dict[str, float]] = {}
    ten = [c for c in cells if c.n1 == 5 and c.n2 == 5]
    for name in ("linear", "geometric", "overall"):
        cs = [c for c in ten if name in ("overall", c.spacing)]
        if not cs:
            continue
        fig = {
            "overall_correct_pct": round(float(np.mean([c.correct for c in cs])), 2),
            "fp_max_pct_noise_le_5": round(max(c.false_positive for c in cs if c.noise <= 0.05), 2),
            "located_pct": _located(cs),
            "located_min_cell_pct": round(float(np.nanmin([c.located_all for c in cs])), 2),
        }
        for join in JOINS:
            fig[f"correct_{join}_pct"] = round(float(np.mean([c.correct_for(join) for c in cs])), 2)
            fig[f"located_{join}_pct"] = _located(cs, (join,))
        for space in ("in", "out"):
            fig[f"located_{space}_pct"] = _located([c for c in cs if c.space == space])
        out[name] = fig
    return out


def meets_targets(summary: dict[str, dict[str, float]]) -> dict[str, bool]:
    """Each acceptance target, met or not (from ``summarize``)."""
    spacings = [v for k, v in summary.items() if k != "overall"]
    overall = summary["overall"]["overall_correct_pct"]
    return {
        "overall_correct": overall >= TARGETS["overall_correct_pct"],
        "spacing_correct": all(s["overall_correct_pct"] >= TARGETS["spacing_correct_pct"]
                               for s in spacings),
        "fp_low_noise": all(s["fp_max_pct_noise_le_5"] < TARGETS["fp_pct_noise_le_5"]
                            for s in spacings),
        "located": all(s["located_pct"] >= TARGETS["located_pct"] for s in spacings),
    }  # fmt: skip


def _pct(x: float) -> str:
    return "–" if np.isnan(x) else f"{x:.1f}"


def noise_markdown(cells: Sequence[Cell]) -> str:
    """The noise table: one row per spacing x space x noise level, FN and located by join."""
    lines = [
        "| spacing | functions | noise | series | correct % | false pos. % | FN jump % "
        "| FN continuous % | located jump % | located continuous % |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.spacing} | {c.space} space | {100 * c.noise:.0f}% | {2 * c.series} "
            f"| {_pct(c.correct)} | {_pct(c.false_positive)} "
            f"| {_pct(c.false_negative['jump'])} | {_pct(c.false_negative['continuous'])} "
            f"| {_pct(c.located['jump'])} | {_pct(c.located['continuous'])} |"
        )
    return "\n".join(lines)


def summary_markdown(summary: dict[str, dict[str, float]]) -> str:
    """The acceptance figures, one row per spacing and one overall."""
    lines = [
        "| spacing | correct % | correct, jumps % | correct, continuous % "
        "| max FP % at noise <= 5% | located % | located, jumps % | located, continuous % "
        "| worst cell located % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f in summary.items():
        lines.append(
            f"| {name} | {f['overall_correct_pct']:.1f} | {f['correct_jump_pct']:.1f} "
            f"| {f['correct_continuous_pct']:.1f} | {f['fp_max_pct_noise_le_5']:.1f} "
            f"| {f['located_pct']:.1f} | {f['located_jump_pct']:.1f} "
            f"| {f['located_continuous_pct']:.1f} | {f['located_min_cell_pct']:.1f} |"
        )
    return "\n".join(lines)


def split_markdown(cells: Sequence[Cell]) -> str:
    """The point-count table: one row per spacing x n (n1/n2), in- and out-of-space columns."""
    lines = [
        "| spacing | points (n1/n2) | in: correct % | in: FN % | in: located % "
        "| out: correct % | out: FN % | out: located % | FP % (in/out) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    index = {(c.spacing, c.space, c.n1, c.n2): c for c in cells}
    keys = sorted(
        {(c.spacing, c.n1 + c.n2, c.n1) for c in cells},
        key=lambda k: (k[0] != "linear", k[1], k[2]),
    )
    for spacing, n, n1 in keys:
        a = index.get((spacing, "in", n1, n - n1))
        b = index.get((spacing, "out", n1, n - n1))
        if a is None or b is None:
            continue
        lines.append(
            f"| {spacing} | {n} ({n1}/{n - n1}) | {_pct(a.correct)} | {_pct(a.fn)} "
            f"| {_pct(a.located_all)} | {_pct(b.correct)} | {_pct(b.fn)} "
            f"| {_pct(b.located_all)} | {_pct(a.false_positive)}/{_pct(b.false_positive)} |"
        )
    return "\n".join(lines)
