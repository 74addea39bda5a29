"""Within- and between-node variances against direct per-node numpy computations."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.variability import nodes
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
