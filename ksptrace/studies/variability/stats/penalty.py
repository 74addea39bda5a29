"""What waiting costs: how far each way of finishing K iterations lies above K mean iterations.

A standard Krylov method waits for the slowest rank at every iteration's global reduction, so
its K iterations take Σ_k max_p T_p^k; a pipelined method overlaps the reductions and takes
about max_p Σ_k T_p^k (the paper's T and T′). Both are compared with Σ_k mean_p T_p^k, the time
with no variability at all. The paper's question, whether pipelined methods pay less for
variability, is the comparison of the two penalties

    lockstep = Σ_k max_p T_p^k / Σ_k mean_p T_p^k − 1,
    rank sum = max_p Σ_k T_p^k / Σ_k mean_p T_p^k − 1,

each with a 95 % interval from resampling the iterations (columns, the same iterations on
every rank, so that a rank's slowness within an iteration stays together): the percentile
interval of the resampled penalties, moved back by their bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.studies.variability.stats.ordered import OrderedRows
from ksptrace.studies.variability.stats.selection import quantiles

RESAMPLES = 200
"""Bootstrap resamples of the iterations; the interval's ends move by about 0.1 point."""


@dataclass(frozen=True)
class Interval:
    """A penalty in per cent and its 95 % bootstrap interval."""

    pct: float
    low: float
    high: float

    def text(self) -> str:
        return (f"{_one(self.pct)} % (95 % interval {_one(self.low)} to {_one(self.high)} %)")


def _one(x: float) -> str:
    """One decimal, and no "-0.0" for a value that rounds to zero."""
    return f"{0.0 if abs(x) < 0.05 else x:.1f}"


@dataclass(frozen=True)
class Penalty:
    """Both penalties of one trace's kept iterations (P ranks x K iterations)."""

    lockstep: Interval
    """What a standard method pays: Σ_k max_p over Σ_k mean_p, minus one, in per cent."""
    rank_sum: Interval
    """What a pipelined method pays: max_p Σ_k over Σ_k mean_p, minus one, in per cent."""
    nprocs: int
    iterations: int
    spread_pct: float = 0.0
    """The middle half of the iteration times (interquartile range) over their median, in %."""
    tail_pct: float = 0.0
    """How far the 99th percentile of the iteration times lies above their median, in %."""


def _pct(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return 100.0 * (numerator / denominator - 1.0)


def resample_counts(picks: np.ndarray, k: int) -> np.ndarray:
    """How often each of ``k`` iterations is picked in each row of ``picks`` (resamples x k,
    float64). One bincount per resample, written into the float matrix: a single bincount of
    every resample offset by k made three temporaries of resamples x k (the offsets, the
    counts and their float copy) and took 1.5 times as long."""
    counts = np.empty((picks.shape[0], k))
    for r, row in enumerate(picks):
        counts[r] = np.bincount(row, minlength=k)
    return counts


def wait_penalty(times: np.ndarray, seed: int = 0, resamples: int = RESAMPLES,
                 ordered: OrderedRows | None = None) -> Penalty | None:
    """The two penalties of ``times`` (ranks x iterations, seconds); None without iterations
    or with a zero mean. ``ordered``: ``times``' rows sorted, if made already (its quantiles
    are then found by binary searches)."""
    t = np.asarray(times, dtype=float)
    if t.ndim != 2 or t.shape[1] == 0 or not np.isfinite(t).all():
        return None
    col_max, col_mean = t.max(axis=0), t.mean(axis=0)
    if col_mean.sum() <= 0:
        return None
    rng = np.random.default_rng(seed)
    k = t.shape[1]
    picks = rng.integers(0, k, size=(resamples, k))
    # Each resample as the counts of the iterations it picked: every resampled sum is then a
    # product with the counts, per rank for max_p Σ_k and for Σ_k mean_p and Σ_k max_p alike
    # (gathering K picked means and maxima per resample cost as much again as the rest, 4.5 ms
    # of a K = 5000 trace's 16 ms).
    counts = resample_counts(picks, k)
    rank_sums = counts @ t.T  # resamples x ranks
    mean_sums, max_sums = (counts @ np.column_stack((col_mean, col_max))).T
    lockstep = _pct(max_sums, mean_sums)
    rank_sum = _pct(rank_sums.max(axis=1), mean_sums)

    def interval(point: float, draws: np.ndarray) -> Interval:
        # The maximum of resampled sums is biased upwards (resampling adds spread between
        # ranks); the percentile interval is moved back by that bias (mean of draws - point).
        bias = float(draws.mean()) - point
        low, high = np.percentile(draws, [2.5, 97.5]) - bias
        return Interval(float(point), float(low), float(high))

    total = col_mean.sum()
    q25, q50, q75, q99 = quantiles(  # np.quantile's bits
        t if ordered is None or ordered.shape != t.shape else ordered, [0.25, 0.5, 0.75, 0.99])
    return Penalty(
        spread_pct=float(100.0 * (q75 - q25) / q50) if q50 > 0 else 0.0,
        tail_pct=float(100.0 * (q99 / q50 - 1.0)) if q50 > 0 else 0.0,
        lockstep=interval(100.0 * (col_max.sum() / total - 1.0), lockstep),
        rank_sum=interval(100.0 * (t.sum(axis=1).max() / total - 1.0), rank_sum),
        nprocs=int(t.shape[0]),
        iterations=int(k),
    )
