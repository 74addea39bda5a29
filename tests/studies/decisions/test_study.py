"""Decision-map studies: depth and threshold sweeps, the best single method, regions."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.maps import DecisionMap, decision_map
from ksptrace.studies.decisions.study import THRESHOLDS, leaves, study


def synthetic(seed: int, n1: int = 7, n2: int = 11, missing: float = 0.0) -> DecisionMap:
    m = syn.measurements(np.random.default_rng(seed), n1, n2, missing=missing)
    return decision_map(m.axis1, m.axis2, m.methods, m.times, ("nprocs", "n"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_exact_tree_has_no_penalty_and_the_depth_sweep_ends_on_it(seed: int) -> None:
    s = study(synthetic(seed))
    assert s.exact.penalty.mean == 0.0
    assert s.exact.penalty.max == 0.0
    assert [int(r.value) for r in s.by_depth] == list(range(s.exact.tree.stats.max_depth + 1))
    assert s.by_depth[-1].penalty.mean == 0.0
    assert s.by_depth[0].tree.stats.leaves == 1
    assert [r.value for r in s.by_threshold] == list(THRESHOLDS)
    assert s.by_threshold[-1].penalty.mean == 0.0
    assert np.array_equal(s.exact.tree.decisions(), s.dm.best)


def test_the_single_best_method_minimises_the_mean_relative_time() -> None:
    dm = synthetic(3)
    s = study(dm)
    rel = dm.relative_times()
    means = np.nanmean(rel.reshape(rel.shape[0], -1), axis=1)
    chosen = int(s.single.tree.decisions()[0, 0])
    assert chosen == int(np.argmin(means))
    assert s.single.penalty.mean == pytest.approx(means[chosen] - 1.0)
    assert s.single.penalty.mean <= min(r.penalty.mean for r in s.by_depth[:1]) + 1e-12


@pytest.mark.parametrize("seed", [0, 4])
def test_regions_cover_every_measured_cell_once_with_the_trees_method(seed: int) -> None:
    dm = synthetic(seed, missing=0.1)
    for s in (study(dm), study(dm, max_depth=2), study(dm, threshold=0.6)):
        chosen = s.chosen.tree.decisions()
        covered = np.zeros(dm.shape, dtype=int)
        for r in s.regions:
            rows = [int(np.flatnonzero(dm.axis1 == v)[0]) for v in r.axis1_values]
            cols = [int(np.flatnonzero(dm.axis2 == v)[0]) for v in r.axis2_values]
            assert rows == list(range(rows[0], rows[-1] + 1))  # contiguous
            assert cols == list(range(cols[0], cols[-1] + 1))
            covered[np.ix_(rows, cols)] += 1
            assert {s.dm.methods[int(m)] for m in chosen[np.ix_(rows, cols)].ravel()} == {r.method}
            upper1 = dm.axis1[rows[-1] + 1] if rows[-1] + 1 < dm.axis1.size else None
            assert r.axis1_upper == upper1
        assert (covered == 1).all()


def test_a_depth_or_threshold_limit_chooses_the_tree_the_code_is_written_from() -> None:
    dm = synthetic(5)
    assert study(dm).chosen is not None
    s2 = study(dm, max_depth=1)
    assert s2.chosen.tree.stats.max_depth <= 1
    assert len(s2.regions) <= 4
    s3 = study(dm, threshold=0.5)
    assert s3.chosen.limit == "threshold"
    assert s3.chosen.value == 0.5


def test_leaves_tile_the_square_map() -> None:
    s = study(synthetic(6))
    side = s.square.size
    seen = np.zeros((side, side), dtype=int)
    for r0, c0, size, method, _ in leaves(s.exact.tree):
        seen[r0:r0 + size, c0:c0 + size] += 1
        assert (s.exact.tree.leaf_map()[r0:r0 + size, c0:c0 + size] == method).all()
    assert (seen == 1).all()
