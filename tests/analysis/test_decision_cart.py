"""CART with the quadtree's leaf budget: exact with enough leaves, one method with one leaf."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.analysis import decision_synthetic as syn
from ksptrace.analysis.decision import DecisionMap, decision_map, square_map
from ksptrace.analysis.decision_cart import cart_tree
from ksptrace.analysis.quadtree import build_quadtree, penalty, penalty_of
from ksptrace.errors import AnalysisError

pytest.importorskip("sklearn")


def labelled(labels: np.ndarray) -> DecisionMap:
    n1, n2 = labels.shape
    n_methods = int(labels.max()) + 1
    i, j, m = np.meshgrid(np.arange(n1), np.arange(n2), np.arange(n_methods), indexing="ij")
    t = np.where(m == labels[:, :, None], 1.0, 1.5 + m / 10.0)
    return decision_map(2.0 ** (i.ravel() + 1), 1000.0 * (j.ravel() + 1),
                        np.array([f"m{k}" for k in m.ravel()]), t.ravel(), ("P", "n"))


def synthetic(seed: int) -> DecisionMap:
    m = syn.measurements(np.random.default_rng(seed), 6, 9)
    return decision_map(m.axis1, m.axis2, m.methods, m.times, ("P", "n"))


@pytest.mark.parametrize("seed", [0, 1])
def test_enough_leaves_reproduce_the_map_with_no_penalty(seed: int) -> None:
    dm = synthetic(seed)
    c = cart_tree(dm, leaves=dm.axis1.size * dm.axis2.size)
    assert np.array_equal(c.decisions, dm.best)
    assert c.penalty.mean == 0.0
    assert c.agreement == 1.0
    assert c.log_axes == (True, True)


def test_one_leaf_is_one_method_everywhere() -> None:
    dm = synthetic(2)
    c = cart_tree(dm, leaves=1)
    assert np.unique(c.decisions).size == 1
    assert (c.leaves, c.depth) == (1, 0)
    assert np.isfinite(c.penalty.mean)
    assert c.penalty.mean >= 0.0


def test_a_split_along_one_axis_is_learnt_with_two_leaves() -> None:
    labels = np.zeros((5, 7), dtype=int)
    labels[:, 4:] = 1  # m1 wins from the fifth n on, at every P
    c = cart_tree(labelled(labels), leaves=2)
    assert np.array_equal(c.decisions, labels)
    assert c.leaves == 2
    assert c.penalty.max == 0.0


def test_the_penalty_is_the_quadtrees_for_the_same_decisions() -> None:
    dm = synthetic(3)
    tree = build_quadtree(square_map(dm), max_depth=1)
    a, b = penalty_of(tree.decisions(), dm), penalty(tree, dm)
    assert np.array_equal(a.per_cell, b.per_cell, equal_nan=True)
    assert (a.mean, a.max, a.median, a.unknown) == (b.mean, b.max, b.median, b.unknown)
    assert a.mean > 0.0
    with pytest.raises(AnalysisError, match="shape"):
        penalty_of(np.zeros((2, 2), dtype=int), dm)


def test_no_leaves_is_refused() -> None:
    with pytest.raises(AnalysisError, match="at least 1 leaf"):
        cart_tree(synthetic(0), leaves=0)
