"""The synthetic evaluation of the segmentation detector (the paper's section 4.1), in the package.

Series are drawn from random PMNF functions c0 + c1 * p^i * log2(p)^j:

* **in space**: (i, j) drawn from Extra-P's search space ``TERMS`` (or the constant model), so
  a window can match the law exactly and only noise or the change make errors;
* **out of space**: i uniform in [0, 3] and j uniform in [0, 2], real-valued, so the law is
  almost never in the search space and every window carries some model error.

c0 is uniform in [1, 100] and c1 log-uniform in [0.1, 10]. A segmented series takes its first
``n1`` points from one function and the rest from a second, independently drawn function with
a different (i, j). A noise level x applies a uniform relative perturbation: y * (1 + u),
u ~ U(-x, x). Points are p = 1..n (linear) or p = 2^1..2^n (geometric).

A result cell counts, over its series: correct (segmented <=> truly segmented), false positives
(flagged among the unsegmented ones), false negatives (missed among the segmented ones) and
located (among the true positives, the change point found where it is: between the last
point of the first law and the first of the second, or on either of those two points as a
shared point).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ksptrace.analysis.pmnf import TERMS
from ksptrace.analysis.segmentation import SegmentationParams, detect_many, model_segments_many

Space = Literal["in", "out"]
Spacing = Literal["linear", "geometric"]

NOISE_LEVELS: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05, 0.10, 0.15)
"""Relative noise levels of the noise table (0-15 %)."""


def points(n: int, spacing: Spacing) -> np.ndarray:
    """p = 1..n, or p = 2^1..2^n."""
    k = np.arange(1, n + 1, dtype=np.float64)
    return k if spacing == "linear" else 2.0**k


@dataclass(frozen=True)
class Functions:
    """S random PMNF functions c0 + c1 * p^i * log2(p)^j (c1 = 0 for a constant)."""

    c0: np.ndarray
    c1: np.ndarray
    i: np.ndarray
    j: np.ndarray

    def __call__(self, p: np.ndarray) -> np.ndarray:
        """float64 [S, len(p)]"""
        p = np.asarray(p, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.power(p[None, :], self.i[:, None]) * np.where(
                self.j[:, None] == 0, 1.0, np.power(np.log2(p)[None, :], self.j[:, None])
            )
        return self.c0[:, None] + self.c1[:, None] * np.nan_to_num(t)

    def same_law(self, other: Functions) -> np.ndarray:
        """bool [S]: both functions have the same (i, j)."""
        return (
            np.isclose(self.i, other.i)
            & np.isclose(self.j, other.j)
            & ((self.c1 == 0) == (other.c1 == 0))
        )


def draw_functions(rng: np.random.Generator, size: int, space: Space) -> Functions:
    """``size`` random functions inside or outside Extra-P's search space."""
    c0 = rng.uniform(1.0, 100.0, size)
    c1 = np.exp(rng.uniform(np.log(0.1), np.log(10.0), size))
    if space == "in":
        k = rng.integers(-1, len(TERMS), size)  # -1: the constant model
        table = np.array([[float(i), float(j)] for i, j in TERMS])
        i = np.where(k >= 0, table[np.maximum(k, 0), 0], 0.0)
        j = np.where(k >= 0, table[np.maximum(k, 0), 1], 0.0)
        c1 = np.where(k >= 0, c1, 0.0)
    else:
        i = rng.uniform(0.0, 3.0, size)
        j = rng.uniform(0.0, 2.0, size)
    return Functions(c0=c0, c1=c1, i=i, j=j)


def draw_pair(rng: np.random.Generator, size: int, space: Space) -> tuple[Functions, Functions]:
    """Two functions per series with different laws (redrawn until (i, j) differ)."""
    first = draw_functions(rng, size, space)
    second = draw_functions(rng, size, space)
    arrays = [second.c0.copy(), second.c1.copy(), second.i.copy(), second.j.copy()]
    for _ in range(100):
        clash = first.same_law(Functions(*arrays))
        if not clash.any():
            break
        again = draw_functions(rng, int(clash.sum()), space)
        for arr, new in zip(arrays, (again.c0, again.c1, again.i, again.j), strict=True):
            arr[clash] = new
    return first, Functions(*arrays)


def add_noise(rng: np.random.Generator, y: np.ndarray, level: float) -> np.ndarray:
    """y * (1 + u), u uniform in [-level, level]."""
    if level <= 0:
        return y
    return y * (1.0 + rng.uniform(-level, level, y.shape))


@dataclass(frozen=True)
class Batch:
    """S synthetic series over the same points, with their truth."""

    p: np.ndarray
    y: np.ndarray
    """float64 [S, n]"""
    segmented: np.ndarray
    """bool [S]"""
    n1: int
    """Points of the first law in segmented series (the change lies between n1-1 and n1)."""


def make_batch(
    rng: np.random.Generator,
    size: int,
    space: Space,
    spacing: Spacing,
    noise: float,
    n1: int,
    n2: int,
    segmented: bool,
) -> Batch:
    """``size`` series of n1 + n2 points, all segmented (first n1 from one law) or none."""
    p = points(n1 + n2, spacing)
    if segmented:
        f, g = draw_pair(rng, size, space)
        y = np.concatenate([f(p[:n1]), g(p[n1:])], axis=1)
    else:
        y = draw_functions(rng, size, space)(p)
    return Batch(p=p, y=add_noise(rng, y, noise), segmented=np.full(size, segmented), n1=n1)


@dataclass(frozen=True)
class Cell:
    """The outcome of one evaluation cell."""

    space: Space
    spacing: Spacing
    noise: float
    n1: int
    n2: int
    series: int
    """Series evaluated: ``series`` unsegmented plus ``series`` segmented (0 of the latter when
    n2 == 0, the unsegmented-only cells of the point-count table)."""
    correct: float
    false_positive: float
    false_negative: float
    located: float

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "space": self.space, "spacing": self.spacing, "noise": self.noise,
            "n1": self.n1, "n2": self.n2, "series": self.series,
            "correct_pct": round(self.correct, 2),
            "false_positive_pct": round(self.false_positive, 2),
            "false_negative_pct": round(self.false_negative, 2),
            "located_pct": round(self.located, 2),
        }  # fmt: skip


def located(lo: np.ndarray, hi: np.ndarray, n1: int) -> np.ndarray:
    """bool: the change point estimate matches a change between points n1-1 and n1."""
    exact = (lo == n1 - 1) & (hi == n1)
    shared = (lo == hi) & ((lo == n1 - 1) | (lo == n1))
    return exact | shared


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
    n = n1 + n2
    clean = make_batch(rng, series, space, spacing, noise, n, 0, segmented=False)
    det0 = detect_many(clean.p, clean.y, params)
    fp = float(det0.segmented.mean() * 100)
    if n2 == 0 or n1 == 0:
        return Cell(space, spacing, noise, n1, n2, series, 100 - fp, fp, float("nan"), float("nan"))
    seg = make_batch(rng, series, space, spacing, noise, n1, n2, segmented=True)
    det1 = detect_many(seg.p, seg.y, params)
    if with_models:
        model_segments_many(seg.y, det1, params)
    tp = det1.segmented
    fn = float((~tp).mean() * 100)
    loc = located(det1.lo[tp], det1.hi[tp], n1)
    loc_pct = float(loc.mean() * 100) if tp.any() else float("nan")
    correct = 100.0 - (fp + fn) / 2
    return Cell(space, spacing, noise, n1, n2, series, correct, fp, fn, loc_pct)


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


def summarize(cells: Sequence[Cell]) -> dict[str, dict[str, float]]:
    """Per spacing, the acceptance figures of the noise table (ten points, 5/5).

    overall: mean % correct over its cells; fp_low_noise: the largest false-positive % at noise
    <= 5 %; located_in / located_out: % of true positives located, pooled over noise levels.
    """
    out: dict[str, dict[str, float]] = {}
    for spacing in ("linear", "geometric"):
        cs = [c for c in cells if c.spacing == spacing and c.n1 == 5 and c.n2 == 5]
        if not cs:
            continue
        tp = {sp: [(1 - c.false_negative / 100) * c.series for c in cs if c.space == sp]
              for sp in ("in", "out")}  # fmt: skip
        loc = {sp: [c.located * (1 - c.false_negative / 100) * c.series / 100
                    for c in cs if c.space == sp] for sp in ("in", "out")}  # fmt: skip
        out[spacing] = {
            "overall_correct_pct": round(float(np.mean([c.correct for c in cs])), 2),
            "fp_max_pct_noise_le_5": round(max(c.false_positive for c in cs if c.noise <= 0.05), 2),
            "located_in_pct": round(100 * sum(loc["in"]) / max(sum(tp["in"]), 1), 2),
            "located_out_pct": round(100 * sum(loc["out"]) / max(sum(tp["out"]), 1), 2),
        }
    return out


def _pct(x: float) -> str:
    return "–" if np.isnan(x) else f"{x:.1f}"


def noise_markdown(cells: Sequence[Cell]) -> str:
    """The noise table: one row per spacing x space x noise level."""
    lines = [
        "| spacing | functions | noise | series | correct % | false pos. % | false neg. % "
        "| located % |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.spacing} | {c.space} space | {100 * c.noise:.0f}% | {2 * c.series} "
            f"| {_pct(c.correct)} | {_pct(c.false_positive)} | {_pct(c.false_negative)} "
            f"| {_pct(c.located)} |"
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
            f"| {spacing} | {n} ({n1}/{n - n1}) | {_pct(a.correct)} | {_pct(a.false_negative)} "
            f"| {_pct(a.located)} | {_pct(b.correct)} | {_pct(b.false_negative)} "
            f"| {_pct(b.located)} | {_pct(a.false_positive)}/{_pct(b.false_positive)} |"
        )
    return "\n".join(lines)
