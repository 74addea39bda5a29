"""Per-size robust medians and their confidence intervals (issue 54): slow outliers left out,
fast ones kept, and the distribution-free interval covers the true median as often as it says."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.persize import (
    LEVEL,
    median_interval,
    robust_medians,
    rows,
    summarize,
)


def test_slow_outliers_are_left_out_before_the_median() -> None:
    values = np.array([[1.0, 1.1, 0.9, 1.05, 100.0], [1.0, 1.1, 0.9, 1.05, 0.2]])
    # the slow one is rejected (a descheduled rank); a fast one is kept (nothing makes a
    # message faster than it is, so a low value is not a disturbance)
    np.testing.assert_allclose(robust_medians(values), [1.025, 1.0])
    assert summarize(values).kept.tolist() == [4, 5]


@pytest.mark.parametrize("n", [6, 10, 40])
def test_the_interval_covers_the_median_as_often_as_it_says(n: int) -> None:
    rng = np.random.default_rng(1)
    draws = 3000
    covered = 0
    for _ in range(draws):
        low, high = median_interval(rng.exponential(size=n))  # skewed, like times
        covered += low <= np.log(2) <= high
    assert covered / draws >= LEVEL - 0.015
    assert covered / draws <= 0.995  # not the whole range every time


def test_too_few_values_bound_no_interval() -> None:
    assert np.isnan(median_interval(np.arange(5.0))).all()
    assert np.isnan(summarize(np.ones((2, 3))).rel_error).all()


def test_the_relative_error_shrinks_with_the_repetitions() -> None:
    rng = np.random.default_rng(2)
    few = summarize(1 + 0.1 * rng.standard_normal((50, 10))).rel_error
    many = summarize(1 + 0.1 * rng.standard_normal((50, 160))).rel_error
    # a median's standard error is about 1.25 sigma / sqrt(n)
    assert np.median(few) == pytest.approx(1.25 * 0.1 / np.sqrt(10), rel=0.35)
    assert np.median(many) == pytest.approx(1.25 * 0.1 / np.sqrt(160), rel=0.35)


def test_rows_pool_the_ranks_and_refuse_bad_shapes() -> None:
    cube = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    pooled = rows(cube, 3, "x")
    assert pooled.shape == (3, 8)
    np.testing.assert_array_equal(pooled[1], [*cube[0, 1], *cube[1, 1]])
    with pytest.raises(AnalysisError, match="one row per message size"):
        rows(cube, 4, "x")
    with pytest.raises(AnalysisError, match="NaN"):
        rows(np.array([1.0, np.nan]), 2, "x")
