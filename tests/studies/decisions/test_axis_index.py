"""Bucketed axis lookup: the same answer as searchsorted, everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ksptrace.studies.decisions.axis_index import axis_index


def probes(ax: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Every value, its neighbours one ulp away, both infinities, NaN, zero, negatives, and
    random values in and around the range (uniform and log-uniform)."""
    span = ax[-1] - ax[0] + 1.0
    parts = [ax, np.nextafter(ax, np.inf), np.nextafter(ax, -np.inf),
             np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, -1.0, 1e300, -1e300, 5e-324]),
             rng.uniform(ax[0] - span, ax[-1] + span, 2000)]
    if ax[0] > 0:
        parts.append(np.exp(rng.uniform(np.log(ax[0]) - 1, np.log(ax[-1]) + 1, 2000)))
    return np.concatenate(parts)


@pytest.mark.parametrize("ax", [
    np.arange(2.0, 33.0),                                   # process counts
    2.0 ** np.arange(0, 25),                                # message sizes 1 B .. 16 MiB
    np.unique(np.round(np.geomspace(100, 1e6, 48))),        # problem sizes, log-spaced
    np.array([1.0, 2.0]),
    np.array([7.0]),
    np.array([-5.0, -1.0, 0.0, 3.0]),                       # no log scale possible
])
def test_equals_searchsorted_on_every_edge(ax: np.ndarray) -> None:
    ix = axis_index(ax)
    assert ix is not None
    x = probes(ax, np.random.default_rng(0))
    assert np.array_equal(ix.index(x), np.searchsorted(ax, x, side="right"))


def test_log_scale_is_chosen_for_log_spaced_values() -> None:
    ix = axis_index(2.0 ** np.arange(0, 25))
    assert ix is not None
    assert ix.log
    assert ix.base.size < 100


def test_too_close_values_fall_back_to_searchsorted() -> None:
    assert axis_index(np.array([0.0, 1e-9, 1.0])) is None
    assert axis_index(np.array([1.0, 1.0])) is None  # not distinct
    assert axis_index(np.array([2.0, 1.0])) is None  # not sorted
    assert axis_index(np.array([1.0, np.inf])) is None


def test_distinct_values_whose_log2_rounds_equal_use_the_linear_scale() -> None:
    """Hypothesis found [1e6 - 1 ulp, 1e6]: log2 rounds both to one float, and the gap of zero
    was divided by in Python floats (ZeroDivisionError); on the linear scale the buckets were
    narrower than the values' rounding and the answer was off by one."""
    ax = np.array([np.nextafter(1e6, 0.0), 1e6])
    assert np.log2(ax[0]) == np.log2(ax[1])
    ix = axis_index(ax)
    if ix is not None:
        assert not ix.log
        x = np.array([0.0, ax[0], ax[1], 2e6])
        assert np.array_equal(ix.index(x), np.searchsorted(ax, x, side="right"))


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1,
                max_size=40, unique=True),
       hs.integers(0, 2**32 - 1))
def test_any_axis_that_gets_buckets_answers_exactly(values: list[float], seed: int) -> None:
    ax = np.array(sorted(values))
    ix = axis_index(ax)
    if ix is None:
        return
    x = probes(ax, np.random.default_rng(seed))
    assert np.array_equal(ix.index(x), np.searchsorted(ax, x, side="right"))
