"""The wait penalty's bootstrap against a direct one: each resample's sums taken one by one."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.variability.stats.penalty import resample_counts, wait_penalty


def _direct(t: np.ndarray, seed: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """The resampled lockstep and rank-sum penalties (%), each resample summed on its own."""
    k = t.shape[1]
    picks = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    col_max, col_mean = t.max(axis=0), t.mean(axis=0)
    lock, rank = [], []
    for cols in picks:
        mean = sum(float(col_mean[c]) for c in cols)
        lock.append(100.0 * (sum(float(col_max[c]) for c in cols) / mean - 1.0))
        rank.append(100.0 * (t[:, cols].sum(axis=1).max() / mean - 1.0))
    return np.array(lock), np.array(rank)


def _interval(point: float, draws: np.ndarray) -> tuple[float, float]:
    bias = float(draws.mean()) - point
    low, high = np.percentile(draws, [2.5, 97.5]) - bias
    return float(low), float(high)


@pytest.mark.parametrize(("nprocs", "k", "seed"), [(1, 50, 0), (3, 200, 1), (8, 37, 2)])
def test_intervals_are_those_of_the_direct_bootstrap(nprocs: int, k: int, seed: int) -> None:
    t = np.random.default_rng(seed + 10).lognormal(-9.0, 0.3, (nprocs, k))
    p = wait_penalty(t, seed=seed, resamples=60)
    assert p is not None
    lock, rank = _direct(t, seed, 60)
    total = t.mean(axis=0).sum()
    for got, draws, point in ((p.lockstep, lock, t.max(axis=0).sum() / total),
                              (p.rank_sum, rank, t.sum(axis=1).max() / total)):
        assert got.pct == pytest.approx(100.0 * (point - 1.0), rel=1e-12, abs=1e-12)
        low, high = _interval(got.pct, draws)
        assert got.low == pytest.approx(low, rel=1e-9, abs=1e-9)
        assert got.high == pytest.approx(high, rel=1e-9, abs=1e-9)



@pytest.mark.parametrize(("k", "seed"), [(5000, 0), (700, 3), (1, 1)])
def test_resample_counts_are_those_of_one_bincount_over_every_resample(k: int, seed: int
                                                                       ) -> None:
    picks = np.random.default_rng(seed).integers(0, k, size=(200, k))
    flat = (picks + (np.arange(200) * k)[:, None]).ravel()  # the counts as first made
    want = np.bincount(flat, minlength=200 * k).reshape(200, k).astype(np.float64)
    got = resample_counts(picks, k)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
