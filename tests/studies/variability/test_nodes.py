"""Within- and between-node variances against direct per-node numpy computations."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.variability.stats import nodes
from ksptrace.trace.synthetic import synthetic_trace


def _direct(col: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, float]:
    groups = [col[ids == n] for n in np.unique(ids)]
    return np.array([g.var() for g in groups]), float(np.var([g.mean() for g in groups]))


def test_one_iteration_matches_direct_computation_with_unsorted_nodes() -> None:
    rng = np.random.default_rng(0)
    ids = rng.permutation(np.repeat(np.arange(5), [3, 4, 5, 2, 6]))
    x = rng.normal(size=(ids.size, 7))
    res = nodes.node_variance(x, ids, iteration=4)
    within, between = _direct(x[:, 4], ids)
    assert np.allclose(res.within, within, rtol=1e-12)
    assert res.between == pytest.approx(between, rel=1e-12)
    assert res.total == pytest.approx(x[:, 4].var(), rel=1e-12)
    assert list(res.ranks) == [3, 4, 5, 2, 6]


@pytest.mark.parametrize("sorted_ids", [True, False])
def test_overall_is_the_mean_of_per_iteration_variances(
    monkeypatch: pytest.MonkeyPatch, sorted_ids: bool,
) -> None:
    rng = np.random.default_rng(1)
    ids = np.repeat(np.arange(4), 8)
    if not sorted_ids:  # ranks gathered by node first; sorted ones are read in place
        ids = rng.permutation(ids)
    x = rng.gamma(2.0, size=(32, 50))
    monkeypatch.setattr(nodes, "COLUMNS_PER_CHUNK_ELEMENTS", 64)
    res = nodes.node_variance(x, ids)
    per = [_direct(x[:, k], ids) for k in range(50)]
    assert np.allclose(res.within, np.mean([p[0] for p in per], axis=0), rtol=1e-12)
    assert res.between == pytest.approx(np.mean([p[1] for p in per]), rel=1e-12)
    assert res.iteration is None


def test_synthetic_lockstep_method_varies_between_nodes_pipelined_within() -> None:
    std = synthetic_trace(128, 200, 16, "gmres", seed=1)
    pipe = synthetic_trace(128, 200, 16, "pipebcgs", seed=1)
    v_std = nodes.node_variance(std.iteration_seconds, std.node_ids)
    v_pipe = nodes.node_variance(pipe.iteration_seconds, pipe.node_ids)
    assert v_std.ratio > 10.0
    assert v_pipe.ratio < 1.0
    assert v_pipe.mean_within > 100 * v_std.mean_within


@pytest.mark.parametrize("lockstep", [False, True])
def test_total_from_within_and_between_is_the_variance_over_all_ranks(lockstep: bool) -> None:
    """The total is not computed by a pass of its own (the law of total variance gives it):
    on iteration times (1e-4 s, a spread of 1e-3 of that, uneven nodes) it is the direct
    variance to 1e-9, and ranks that agree within their node have no within-node variance."""
    rng = np.random.default_rng(2)
    counts = [3, 8, 1, 5]
    ids = np.repeat(np.arange(4), counts)
    x = 1e-4 * (1.0 + 1e-3 * rng.standard_normal((ids.size, 40)))
    if lockstep:  # every rank of a node has its node's first rank's times
        x = x[np.repeat(np.cumsum([0, *counts[:-1]]), counts)]
    res = nodes.node_variance(x, ids)
    assert res.total == pytest.approx(float(x.var(axis=0).mean()), rel=1e-9)
    if lockstep:  # to rounding: a node mean of equal values need not round back to them
        assert res.within.max() < 1e-12 * res.total
    else:
        assert (res.within > 0.0).sum() == 3  # the node of one rank has none


def test_equal_and_unequal_node_sizes_take_both_paths() -> None:
    """Nodes of equal size (summed through a reshape) and of unequal size (np.add.reduceat)
    give the direct per-node variances of the same times."""
    rng = np.random.default_rng(3)
    for counts in ([4, 4, 4], [4, 3, 5]):
        ids = np.repeat(np.arange(3), counts)
        x = rng.lognormal(-9.0, 0.2, (ids.size, 30))
        res = nodes.node_variance(x, ids)
        per = [_direct(x[:, k], ids) for k in range(30)]
        assert np.allclose(res.within, np.mean([p[0] for p in per], axis=0), rtol=1e-12)
        assert res.between == pytest.approx(np.mean([p[1] for p in per]), rel=1e-12)
        assert res.total == pytest.approx(float(x.var(axis=0).mean()), rel=1e-12)
