"""Quadtrees over decision maps: exactness, limits, statistics, penalty and the two queries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.maps import DecisionMap, decision_map, square_map
from ksptrace.studies.decisions.quadtree import QuadTree, build_quadtree, penalty, penalty_of


def map_of(labels: np.ndarray, n_methods: int | None = None, slower: float = 1.0) -> DecisionMap:
    """A map whose best method per cell is ``labels``; the others are 1 + slower * (1 + m/10)
    times slower. Axis values are 10, 20, ... and 100, 200, ..."""
    labels = np.asarray(labels)
    n_methods = n_methods or int(labels.max()) + 1
    n1, n2 = labels.shape
    i, j, m = np.meshgrid(np.arange(n1), np.arange(n2), np.arange(n_methods), indexing="ij")
    t = np.where(m == labels[:, :, None], 1.0, 1.0 + slower * (1.0 + m / 10.0))
    return decision_map(10.0 * (i.ravel() + 1), 100.0 * (j.ravel() + 1),
                        np.array([f"m{k}" for k in m.ravel()]), t.ravel(), ("P", "n"))


def synthetic(seed: int, n1: int = 25, n2: int = 48, missing: float = 0.1) -> DecisionMap:
    m = syn.measurements(np.random.default_rng(seed), n1, n2, missing=missing)
    return decision_map(m.axis1, m.axis2, m.methods, m.times, ("P", "n"))


def one_by_one(tree: QuadTree, a: np.ndarray, b: np.ndarray) -> list[int]:
    return [tree.query(x, y) for x, y in zip(a, b, strict=True)]


def grid_queries(tree: QuadTree, dm: DecisionMap) -> np.ndarray:
    return np.array([[tree.query(a, b) for b in dm.axis2] for a in dm.axis1])


@pytest.mark.parametrize(("seed", "n1", "n2"), [(0, 25, 48), (1, 8, 8), (2, 3, 17), (3, 33, 5)])
def test_exact_tree_reproduces_the_map_cell_for_cell(seed: int, n1: int, n2: int) -> None:
    dm = synthetic(seed, n1, n2)
    sq = square_map(dm)
    tree = build_quadtree(sq, max_depth=None, threshold=1.0)
    read = np.ix_([np.flatnonzero(sq.row_source == i).max() for i in range(n1)],
                  [np.flatnonzero(sq.col_source == j).max() for j in range(n2)])
    # the copies queries read (the last of each measured row and column)
    assert np.array_equal(tree.leaf_map()[read], sq.cells[read])
    assert np.array_equal(tree.decisions(), dm.best)
    assert np.array_equal(grid_queries(tree, dm), dm.best)
    assert tree.stats.max_depth <= sq.k


def test_exact_tree_has_no_penalty() -> None:
    dm = synthetic(4)
    pen = penalty(build_quadtree(square_map(dm)), dm)
    assert pen.mean == 0.0
    assert pen.max == 0.0
    assert pen.unknown == 0
    assert np.isnan(pen.per_cell[dm.filled]).all()


def test_depth_zero_gives_one_method_for_everything() -> None:
    dm = synthetic(5)
    sq = square_map(dm)
    majority = build_quadtree(sq, max_depth=0)
    assert majority.stats.nodes == 1
    assert majority.stats.leaves == 1
    # every measured cell counts once, however often the encoding copied it
    assert np.unique(majority.decisions()).tolist() == [np.bincount(dm.best.ravel()).argmax()]
    on_average = build_quadtree(sq, max_depth=0, leaf="penalty")
    rel = dm.relative_times()[:, sq.row_source][:, :, sq.col_source]
    assert np.unique(on_average.decisions()).tolist() == [np.nanmean(rel, axis=(1, 2)).argmin()]
    assert penalty(on_average, dm).mean <= penalty(majority, dm).mean


def test_best_on_average_and_majority_differ_when_the_common_winner_wins_by_little() -> None:
    # m0 wins 3 of 4 cells by 1 %, m1 wins the fourth by a factor 10.
    labels = np.array([[0, 0], [0, 1]])
    dm = map_of(labels)
    t = dm.times.copy()
    t[1, labels == 0] = 1.01
    t[0, 1, 1] = 10.0
    dm = DecisionMap(dm.axis_names, dm.axis1, dm.axis2, dm.methods, t, dm.counts, dm.best,
                     dm.filled)
    sq = square_map(dm)
    assert build_quadtree(sq, max_depth=0).decisions()[0, 0] == 0
    assert build_quadtree(sq, max_depth=0, leaf="penalty").decisions()[0, 0] == 1


def test_statistics_of_a_hand_built_map() -> None:
    labels = np.array([[0, 1, 2, 2], [1, 0, 2, 2], [1, 1, 0, 0], [1, 1, 0, 0]])
    tree = build_quadtree(square_map(map_of(labels)))
    s = tree.stats
    assert s.nodes == 9
    assert s.leaves == 7
    assert s.max_depth == 2
    assert s.min_leaf_depth == 1
    assert s.mean_depth == pytest.approx((3 * 1 + 4 * 2) / 7)
    assert s.mean_cell_depth == pytest.approx((12 * 1 + 4 * 2) / 16)
    assert s.bytes >= 9 * 4
    assert tree.code.dtype == np.int32
    # Breadth-first: the root's children are nodes 1-4, the top-left quadrant's are 5-8.
    assert tree.code[0] == 1
    assert tree.code[1] == 5
    assert tree.code[5:].tolist() == [-1, -2, -2, -1]
    assert tree.code[2:5].tolist() == [-3, -2, -1]


def test_threshold_merges_blocks_whose_majority_is_large_enough() -> None:
    labels = np.array([[0, 1, 2, 2], [0, 0, 2, 2], [1, 1, 0, 0], [1, 1, 0, 0]])
    sq = square_map(map_of(labels))
    assert build_quadtree(sq, threshold=0.75).stats.nodes == 5  # 3 of 4 is enough
    assert build_quadtree(sq, threshold=0.76).stats.nodes == 9
    assert build_quadtree(sq, threshold=0.3).stats.nodes == 1  # 0 holds 7 of 16 cells


def test_limits_shrink_the_tree_and_penalty_falls_with_depth_overall() -> None:
    dm = synthetic(6)
    sq = square_map(dm)
    trees = [build_quadtree(sq, max_depth=d) for d in range(sq.k + 1)]
    nodes = [t.stats.nodes for t in trees]
    assert nodes == sorted(nodes)
    assert all(t.stats.max_depth <= d for d, t in enumerate(trees))
    pens = [penalty(t, dm).mean for t in trees]
    assert pens[-1] == 0.0
    assert pens[0] >= max(pens[1:])
    thresholds = [build_quadtree(sq, threshold=th).stats.nodes for th in (0.5, 0.8, 0.95, 1.0)]
    assert thresholds == sorted(thresholds)


def test_boundary_rule_outside_and_between_measured_values() -> None:
    labels = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]])  # axes 10, 20, 30 and 100, 200, 300
    tree = build_quadtree(square_map(map_of(labels)))
    assert tree.query(-5.0, 100.0) == labels[0, 0]  # below the smallest P: the smallest
    assert tree.query(1e9, 1e9) == labels[2, 2]  # above both: the largest
    assert tree.query(10.0, -1.0) == labels[0, 0]
    assert tree.query(19.999, 299.0) == labels[0, 1]  # between: the lower measured value
    assert tree.query(20.0, 300.0) == labels[1, 2]
    a = np.array([-5.0, 1e9, 10.0, 19.999, 20.0])
    b = np.array([100.0, 1e9, -1.0, 299.0, 300.0])
    assert tree.query_many(a, b).tolist() == [0, 1, 0, 1, 0]


def test_scalar_and_vectorised_queries_agree_off_the_grid() -> None:
    dm = synthetic(7)
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 40, 5000)
    b = np.exp(rng.uniform(np.log(10.0), np.log(1e7), 5000))
    for tree in (build_quadtree(square_map(dm)), build_quadtree(square_map(dm), max_depth=3),
                 build_quadtree(square_map(dm), threshold=0.6)):
        assert tree.query_many(a, b).tolist() == one_by_one(tree, a, b)


def test_decisions_match_the_leaf_map_at_the_last_replica_of_each_measured_row() -> None:
    dm = synthetic(8, 11, 6)
    sq = square_map(dm)
    tree = build_quadtree(sq, max_depth=2)
    rows = np.array([np.flatnonzero(sq.row_source == i).max() for i in range(11)])
    cols = np.array([np.flatnonzero(sq.col_source == j).max() for j in range(6)])
    assert np.array_equal(tree.decisions(), tree.leaf_map()[np.ix_(rows, cols)])


def test_bad_limits_are_refused() -> None:
    sq = square_map(synthetic(9, 4, 4))
    with pytest.raises(AnalysisError, match="max_depth"):
        build_quadtree(sq, max_depth=-1)
    with pytest.raises(AnalysisError, match=r"threshold is a share in \(0, 1\]"):
        build_quadtree(sq, threshold=0.0)
    with pytest.raises(AnalysisError, match="threshold"):
        build_quadtree(sq, threshold=1.5)
    with pytest.raises(AnalysisError, match="one length"):
        build_quadtree(sq).query_many(np.zeros(3), np.zeros(2))


@settings(max_examples=40, deadline=None)
@given(n1=hs.integers(2, 20), n2=hs.integers(2, 20), n_methods=hs.integers(2, 5),
       seed=hs.integers(0, 2**32 - 1), depth=hs.one_of(hs.none(), hs.integers(0, 5)),
       threshold=hs.floats(0.2, 1.0))
def test_random_maps(n1: int, n2: int, n_methods: int, seed: int, depth: int | None,
                     threshold: float) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_methods, (n1, n2))
    labels.flat[:n_methods] = np.arange(n_methods)  # every method somewhere
    dm = map_of(labels, n_methods)
    sq = square_map(dm)
    exact = build_quadtree(sq)
    assert np.array_equal(exact.decisions(), labels)
    limited = build_quadtree(sq, max_depth=depth, threshold=threshold)
    assert limited.stats.nodes <= exact.stats.nodes
    assert limited.stats.nodes == 1 + 4 * (limited.stats.nodes - limited.stats.leaves)
    pen = penalty(limited, dm)
    assert pen.mean >= 0.0
    assert (pen.mean == 0.0) == np.array_equal(limited.decisions(), labels)
    a = rng.uniform(0, 10 * n1 + 20, 50)
    b = rng.uniform(0, 100 * n2 + 200, 50)
    assert limited.query_many(a, b).tolist() == one_by_one(limited, a, b)


def test_a_choice_never_run_in_a_cell_is_not_run_there_never_0_percent() -> None:
    """Issue 63: "always BCGS" scored 0 % by skipping the one cell where BCGS never ran."""
    a1 = np.array([1, 1, 2, 2, 1, 1, 2], dtype=float)
    a2 = np.array([1, 2, 1, 2, 1, 2, 1], dtype=float)
    methods = np.array(["bcgs"] * 3 + ["gmres"] * 4)  # bcgs never ran at (2, 2)
    times = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    dm = decision_map(a1, a2, methods, times)
    always_bcgs = np.zeros(dm.shape, dtype=np.int64)
    pen = penalty_of(always_bcgs, dm)
    assert pen.unknown == 1
    assert np.isnan(pen.mean)  # not the 0 % of the three cells it ran in
    assert np.isnan(pen.max)
    assert pen.text() == "not run in 1 of 4 measured cells"
    gmres = penalty_of(np.ones(dm.shape, dtype=np.int64), dm)
    assert gmres.text() == "75 %"  # 2 s against 1 s in three cells, equal in one
    assert gmres.text("max") == "100 %"
