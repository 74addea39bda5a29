"""A CART classification tree over the same decision map, for comparison with the quadtree.

The issue's question: with the same number of leaves (regions), does a general axis-aligned
tree (scikit-learn's CART, which may split anywhere) give away less than a quadtree (which only
halves blocks)? CART is trained on the measured cells of the unreplicated map, one sample per
cell labelled with its fastest method; an axis whose values are all positive enters as log2 of
the value (process counts and sizes are multiplicative). Its decisions on every grid cell are
then scored with the same penalty as the quadtree's.

scikit-learn is optional (Debian's python3-sklearn, or ``pip install scikit-learn``); it is
imported only when a comparison is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions.maps import DecisionMap
from ksptrace.studies.decisions.quadtree import Penalty, penalty_of


@dataclass(frozen=True)
class CartResult:
    """A CART tree's decisions on the map and what they cost."""

    leaves_asked: int
    leaves: int
    depth: int
    decisions: np.ndarray
    """int64 [n1, n2]: the method index CART chooses per grid cell."""
    penalty: Penalty
    agreement: float
    """Share of measured cells where CART chooses the fastest method."""
    log_axes: tuple[bool, bool]


def available() -> bool:
    """Whether scikit-learn can be imported."""
    try:
        import sklearn.tree  # noqa: F401
    except ImportError:
        return False
    return True


def cart_tree(dm: DecisionMap, leaves: int, seed: int = 0) -> CartResult:
    """Fit CART with at most ``leaves`` leaves to the measured cells and score it."""
    if leaves < 1:
        raise AnalysisError(f"a CART tree needs at least 1 leaf, got {leaves}")
    try:
        from sklearn.tree import DecisionTreeClassifier
    except ImportError:
        raise AnalysisError("the CART comparison needs scikit-learn: apt-get install "
                            "python3-sklearn, or pip install scikit-learn") from None
    log_axes = (bool((dm.axis1 > 0).all()), bool((dm.axis2 > 0).all()))
    x1 = np.log2(dm.axis1) if log_axes[0] else dm.axis1
    x2 = np.log2(dm.axis2) if log_axes[1] else dm.axis2
    g1, g2 = np.meshgrid(x1, x2, indexing="ij")
    features = np.column_stack([g1.ravel(), g2.ravel()])
    measured = ~dm.filled.ravel()
    labels = dm.best.ravel()
    if leaves == 1 or np.unique(labels[measured]).size == 1:
        # scikit-learn needs max_leaf_nodes >= 2; one leaf is the majority method
        counts = np.bincount(labels[measured], minlength=len(dm.methods))
        decisions = np.full(dm.shape, int(np.argmax(counts)), dtype=np.int64)
        n_leaves, depth = 1, 0
    else:
        model = DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=seed)
        model.fit(features[measured], labels[measured])
        decisions = model.predict(features).astype(np.int64).reshape(dm.shape)
        n_leaves, depth = int(model.get_n_leaves()), int(model.get_depth())
    best = dm.best[~dm.filled]
    agreement = float((decisions[~dm.filled] == best).mean())
    return CartResult(leaves, n_leaves, depth, decisions, penalty_of(decisions, dm), agreement,
                      log_axes)
