"""Drawn detours follow the requested distribution, per rank or per node, reproducibly."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ksptrace.noise.draw import all_detours, detours, rank_detours
from ksptrace.noise.spec import parse

CONTINUOUS = [
    "exponential:scale=20us",
    "lognormal:median=10us,sigma=1.5",
    "pareto:scale=10us,shape=1.5",
    "uniform:low=1us,high=100us",
]


@pytest.mark.parametrize("text", CONTINUOUS)
def test_sizes_follow_the_distribution(text: str) -> None:
    spec = parse(text + ",p=0.3,seed=11")
    x = detours(spec, unit=4, iterations=20_000)
    hits = x[x > 0]
    # The share of iterations with a detour is p (binomial, 5 standard deviations).
    assert abs(hits.size / x.size - 0.3) < 5 * np.sqrt(0.3 * 0.7 / x.size)
    family, kwargs = spec.scipy_args()
    result = stats.kstest(hits, getattr(stats, family)(**kwargs).cdf)
    assert result.pvalue > 1e-3, (text, result)


def test_a_wrong_distribution_is_rejected_by_the_same_test() -> None:
    """The KS check above can fail: exponential draws are not lognormal."""
    x = detours(parse("exponential:scale=20us,seed=2"), 0, 5000)
    family, kwargs = parse("lognormal:median=14us,sigma=1").scipy_args()
    assert stats.kstest(x, getattr(stats, family)(**kwargs).cdf).pvalue < 1e-6


def test_fixed_and_none() -> None:
    x = detours(parse("fixed:value=50us,p=0.5,seed=1"), 0, 1000)
    assert np.unique(x) == pytest.approx([0.0, 50e-6], abs=1e-18)
    assert not detours(parse("none"), 0, 100).any()
    assert detours(parse("none"), 0, 100).shape == (100,)


def test_reproducible_independent_per_rank_shared_per_node() -> None:
    spec = parse("exponential:scale=5us,p=0.5,seed=3")
    assert np.array_equal(detours(spec, 1, 500), detours(spec, 1, 500))
    assert not np.array_equal(detours(spec, 0, 500), detours(spec, 1, 500))
    other_seed = parse("exponential:scale=5us,p=0.5,seed=4")
    assert not np.array_equal(detours(spec, 1, 500), detours(other_seed, 1, 500))
    node_ids = np.array([0, 0, 1, 1])
    per_rank = all_detours(spec, node_ids, 200)
    assert not np.array_equal(per_rank[0], per_rank[1])
    per_node = all_detours(parse("exponential:scale=5us,p=0.5,seed=3,per=node"), node_ids, 200)
    assert np.array_equal(per_node[0], per_node[1])
    assert np.array_equal(per_node[2], per_node[3])
    assert not np.array_equal(per_node[0], per_node[2])
    # A rank's stream does not depend on how many ranks there are, or on K's prefix.
    assert np.array_equal(rank_detours(spec, 1, 0, 100), detours(spec, 1, 100))
