"""Bucketed lookup of a value's position among a sorted axis: ``searchsorted(values, x,
"right")`` for many x at once, without a binary search.

A binary search over a few dozen values costs about 25 ns per query in numpy (its branches are
unpredictable for random queries). Here the axis range is cut into equal buckets, in the
values' own scale or in log2 when that spreads them better, narrow enough that a bucket widened
by a quarter of its width on each side holds at most one axis value. A query then computes its
bucket, adds the number of axis values below that widened bucket, and compares itself with the
one value that may lie inside. The comparison is made with the original values, so rounding in
the bucket computation (smaller than the widening) cannot change the result: the answer equals
``searchsorted`` exactly, which the tests check on every value, its neighbours one ulp away, and
values beyond both ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_BUCKETS = 1 << 14
"""Axes whose closest two values would need more buckets use ``searchsorted`` instead."""


@dataclass(frozen=True)
class AxisIndex:
    """Buckets over one sorted axis (see the module docstring)."""

    values: np.ndarray
    log: bool
    """Buckets are equal in log2 of the value (else in the value)."""
    lo: float
    """The first value, transformed."""
    scale: float
    """Buckets per transformed unit."""
    base: np.ndarray
    """int64 [buckets]: how many values lie below the widened bucket."""
    candidate: np.ndarray
    """float64 [buckets]: the value inside the widened bucket, +inf when there is none."""

    def index(self, x: np.ndarray) -> np.ndarray:
        """int64: ``np.searchsorted(values, x, side="right")``, NaN included (it sorts last)."""
        if self.log:
            # zero and negatives go below the range (the comparison below uses x itself)
            t = np.log2(np.maximum(x, np.finfo(np.float64).smallest_subnormal))
        else:
            t = np.array(x, dtype=np.float64)
        t -= self.lo
        with np.errstate(over="ignore", invalid="ignore"):  # far beyond the range: inf, fine
            t *= self.scale
        np.fmin(t, self.base.size - 1, out=t)  # fmin/fmax: NaN goes to the last bucket
        np.fmax(t, 0, out=t)
        g = t.astype(np.int64)
        out = self.base[g]
        out += ~(x < self.candidate[g])  # NaN: not below anything, so it counts every value
        return out


def axis_index(values: np.ndarray, max_buckets: int = MAX_BUCKETS) -> AxisIndex | None:
    """Buckets for the sorted, distinct, finite ``values``; None when none fit ``max_buckets``."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all() or (np.diff(v) <= 0).any():
        return None
    scales = [False, True] if (v > 0).all() else [False]
    best: AxisIndex | None = None
    for log in scales:
        t = np.log2(v) if log else v
        span = float(t[-1] - t[0])
        gap = float(np.diff(t).min()) if v.size > 1 else 1.0
        if gap <= 0:  # distinct values whose log2 rounds to the same float
            continue
        with np.errstate(over="ignore", divide="ignore"):
            need = 2.0 * span / gap if v.size > 1 else 0.0
        if not np.isfinite(need) or need + 1 > max_buckets:
            continue
        buckets = 1 if v.size == 1 else int(np.ceil(need)) + 1
        width = span / (buckets - 1) if buckets > 1 else 1.0
        widen = 0.25 * width
        if v.size > 1 and widen <= 8 * float(np.spacing(max(abs(t[0]), abs(t[-1])))):
            continue  # the widening is below the values' rounding: it cannot absorb it
        starts = t[0] + width * np.arange(buckets) - widen
        ends = starts + width + 2 * widen
        base = np.searchsorted(t, starts, side="left").astype(np.int64)
        inside = np.searchsorted(t, ends, side="left") - base
        if (inside > 1).any():  # rounding put two values in one bucket: use the other scale
            continue
        candidate = np.where(inside == 1, v[np.minimum(base, v.size - 1)], np.inf)
        made = AxisIndex(v, log, float(t[0]), 1.0 / width, base, candidate)
        if best is None or made.base.size < best.base.size:
            best = made
    return best
