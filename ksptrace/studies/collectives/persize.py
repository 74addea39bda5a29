"""Per message size: a robust median of the repetitions and a confidence interval for it.

Repetitions of a timed message on a shared machine are disturbed one way only: a descheduled
rank makes a time longer, never shorter. So per size the repetitions more than
:data:`REJECT_MADS` scaled median absolute deviations *above* the median are left out, and the
median of the rest is the size's value. Its confidence interval is distribution-free: with n
values kept, the median lies between the l-th and the (n + 1 - l)-th smallest with probability
at least :data:`LEVEL`, l from the binomial distribution Bin(n, 1/2) (the count of values below
the true median). Half that interval's width over the median, divided by the normal quantile of
the level, is the size's relative standard error: what the step fit weighs each size by, and
what a step must stand out of.

Pure: numpy arrays in, a frozen dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binom, norm

from ksptrace.errors import AnalysisError

REJECT_MADS = 5.0
"""A repetition more than this many (scaled) median absolute deviations above its size's median
is left out before the median is taken: disturbances on a shared machine only lengthen times."""
LEVEL = 0.95
"""The confidence level of each size's interval."""
MAD_SCALE = 1.4826
"""The MAD of a normal sample times this estimates its standard deviation."""


@dataclass(frozen=True)
class SizeSummary:
    """Per size (rows of the input): the robust median, its confidence interval at
    :data:`LEVEL`, and how many repetitions were kept."""

    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    kept: np.ndarray

    @property
    def rel_error(self) -> np.ndarray:
        """The relative standard error of each median (NaN where the interval is undefined:
        fewer than 6 values bound no interval at this level)."""
        z = float(norm.ppf(0.5 + LEVEL / 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (self.high - self.low) / (2 * z * np.abs(self.median))
        return np.asarray(np.where(np.isfinite(rel), rel, np.nan))


def rows(values: np.ndarray, m: int, what: str) -> np.ndarray:
    """[M], [M, R] or [P, M, R] (every rank measured in turn) as [M, P * R]."""
    v = np.asarray(values, np.float64)
    if v.ndim == 1:
        v = v[:, None]
    if v.ndim == 3:
        v = np.moveaxis(v, 0, 1).reshape(v.shape[1], -1)
    if v.ndim != 2 or v.shape[0] != m:
        raise AnalysisError(f"{what} must have one row per message size ({m}), got {v.shape}")
    if not np.isfinite(v).all():
        raise AnalysisError(f"{what} holds NaN or inf; drop the bad trace")
    return v


def kept_mask(values: np.ndarray) -> np.ndarray:
    """Per row, True for the values within :data:`REJECT_MADS` MADs above the row's median."""
    v = np.asarray(values, np.float64)
    med = np.median(v, axis=1, keepdims=True)
    spread = MAD_SCALE * np.median(np.abs(v - med), axis=1, keepdims=True)
    return np.asarray(v <= med + REJECT_MADS * spread)


def robust_medians(values: np.ndarray) -> np.ndarray:
    """Per row, the median of the values left after rejecting the slow outliers."""
    v = np.asarray(values, np.float64)
    return np.asarray(np.nanmedian(np.where(kept_mask(v), v, np.nan), axis=1))


def median_interval(values: np.ndarray) -> tuple[float, float]:
    """The distribution-free interval for the median of ``values`` at :data:`LEVEL` (NaN, NaN
    when there are too few values to bound it)."""
    x = np.sort(np.asarray(values, np.float64))
    n = x.size
    # the smallest k with P(Bin(n, 1/2) <= k) >= a/2: then P(Bin <= k - 1) < a/2, and the
    # k-th smallest (0-based k - 1) and its mirror bound the median with probability >= LEVEL
    lower = int(binom.ppf((1 - LEVEL) / 2, n, 0.5)) - 1
    if lower < 0:
        return float("nan"), float("nan")
    return float(x[lower]), float(x[n - 1 - lower])


def summarize(values: np.ndarray) -> SizeSummary:
    """Per row of [M, R]: the robust median, its interval and the count kept."""
    v = np.asarray(values, np.float64)
    keep = kept_mask(v)
    bounds = np.array([median_interval(row[k]) for row, k in zip(v, keep, strict=True)])
    return SizeSummary(robust_medians(v), bounds[:, 0], bounds[:, 1], keep.sum(axis=1))
