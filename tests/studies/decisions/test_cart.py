"""CART with the quadtree's leaf budget: exact with enough leaves, one method with one leaf.

Tests that fit a tree take the ``sklearn`` fixture (skipped without scikit-learn); the argument
checks, the message without scikit-learn and the shared penalty run everywhere.
"""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.cart import cart_tree
from ksptrace.studies.decisions.maps import DecisionMap, decision_map, square_map
from ksptrace.studies.decisions.quadtree import build_quadtree, penalty, penalty_of


@pytest.fixture
def sklearn() -> ModuleType:
    return pytest.importorskip("sklearn")


def labelled(labels: np.ndarray, p: np.ndarray | None = None,
             n: np.ndarray | None = None) -> DecisionMap:
    """The winner per cell is ``labels``; axes 2, 4, 8, ... and 1000, 2000, ... unless given."""
    n1, n2 = labels.shape
    p = 2.0 ** np.arange(1, n1 + 1) if p is None else np.asarray(p, dtype=np.float64)
    n = 1000.0 * np.arange(1, n2 + 1) if n is None else np.asarray(n, dtype=np.float64)
    n_methods = int(labels.max()) + 1
    i, j, m = np.meshgrid(np.arange(n1), np.arange(n2), np.arange(n_methods), indexing="ij")
    t = np.where(m == labels[:, :, None], 1.0, 1.5 + m / 10.0)
    return decision_map(p[i.ravel()], n[j.ravel()], np.array([f"m{k}" for k in m.ravel()]),
                        t.ravel(), ("P", "n"))


def synthetic(seed: int, missing: float = 0.0) -> DecisionMap:
    m = syn.measurements(np.random.default_rng(seed), 6, 9, missing=missing)
    return decision_map(m.axis1, m.axis2, m.methods, m.times, ("P", "n"))


@pytest.mark.usefixtures("sklearn")
@pytest.mark.parametrize("seed", [0, 1])
def test_enough_leaves_reproduce_the_map_with_no_penalty(seed: int) -> None:
    dm = synthetic(seed)
    c = cart_tree(dm, leaves=dm.axis1.size * dm.axis2.size)
    assert np.array_equal(c.decisions, dm.best)
    assert c.penalty.mean == 0.0
    assert c.agreement == 1.0
    assert c.log_axes == (True, True)


@pytest.mark.usefixtures("sklearn")
def test_filled_cells_get_a_decision_but_no_penalty() -> None:
    dm = synthetic(7, missing=0.25)
    assert dm.filled.any()
    c = cart_tree(dm, leaves=dm.axis1.size * dm.axis2.size)
    measured = ~dm.filled
    assert np.array_equal(c.decisions[measured], dm.best[measured])
    assert ((c.decisions >= 0) & (c.decisions < len(dm.methods))).all()
    assert np.isnan(c.penalty.per_cell[dm.filled]).all()
    assert (c.penalty.per_cell[measured] == 0.0).all()
    assert (c.penalty.mean, c.penalty.unknown, c.agreement) == (0.0, 0, 1.0)


@pytest.mark.usefixtures("sklearn")
def test_one_leaf_is_one_method_everywhere() -> None:
    dm = synthetic(2)
    c = cart_tree(dm, leaves=1)
    assert np.unique(c.decisions).size == 1
    assert (c.leaves, c.depth) == (1, 0)
    assert np.isfinite(c.penalty.mean)
    assert c.penalty.mean >= 0.0


@pytest.mark.usefixtures("sklearn")
def test_a_split_along_one_axis_is_learnt_with_two_leaves() -> None:
    labels = np.zeros((5, 7), dtype=int)
    labels[:, 4:] = 1  # m1 wins from the fifth n on, at every P
    c = cart_tree(labelled(labels), leaves=2)
    assert np.array_equal(c.decisions, labels)
    assert c.leaves == 2
    assert c.depth == 1
    assert c.penalty.max == 0.0
    assert c.agreement == 1.0


@pytest.mark.usefixtures("sklearn")
def test_a_split_along_the_first_axis_is_learnt_with_two_leaves() -> None:
    labels = np.zeros((6, 4), dtype=int)
    labels[2:, :] = 1  # m1 wins from P = 8 on, at every n
    c = cart_tree(labelled(labels), leaves=2)
    assert np.array_equal(c.decisions, labels)
    assert (c.leaves, c.depth, c.penalty.max) == (2, 1, 0.0)


@pytest.mark.usefixtures("sklearn")
def test_an_axis_with_a_value_at_or_below_zero_is_not_logged() -> None:
    labels = np.zeros((4, 3), dtype=int)
    labels[2:, :] = 1
    c = cart_tree(labelled(labels, p=np.array([1, 2, 3, 4]), n=np.array([-5, 0, 5])), leaves=2)
    assert c.log_axes == (True, False)
    assert np.array_equal(c.decisions, labels)
    c = cart_tree(labelled(labels, p=np.array([0, 1, 2, 3])), leaves=2)
    assert c.log_axes == (False, True)
    assert np.array_equal(c.decisions, labels)


def test_the_penalty_is_the_quadtrees_for_the_same_decisions() -> None:
    dm = synthetic(3)
    tree = build_quadtree(square_map(dm), max_depth=1)
    a, b = penalty_of(tree.decisions(), dm), penalty(tree, dm)
    assert np.array_equal(a.per_cell, b.per_cell, equal_nan=True)
    assert (a.mean, a.max, a.median, a.unknown) == (b.mean, b.max, b.median, b.unknown)
    assert a.mean > 0.0
    with pytest.raises(AnalysisError, match="shape"):
        penalty_of(np.zeros((2, 2), dtype=int), dm)


@pytest.mark.parametrize("leaves", [0, -3])
def test_no_leaves_is_refused(leaves: int) -> None:
    with pytest.raises(AnalysisError, match="at least 1 leaf"):
        cart_tree(synthetic(0), leaves=leaves)


def test_without_scikit_learn_the_message_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # None in sys.modules: ImportError
    monkeypatch.setitem(sys.modules, "sklearn.tree", None)
    with pytest.raises(AnalysisError, match="needs scikit-learn: apt-get install python3-sklearn"):
        cart_tree(synthetic(0), leaves=4)
