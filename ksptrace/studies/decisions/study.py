"""A decision-map study: the exact tree, trees limited by depth and by accuracy threshold, and
their regions, as Pjesivac-Grbovic, Fagg and Dongarra's Tables 3 and 4 and Figures 2, 3 and 5
report them.

Everything here is pure: measurements in (a ``DecisionMap``), frozen results out. The figures,
files and the CLI sit in ``decision_report`` and ``ksptrace.cli.decide``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.studies.decisions import cart as decision_cart
from ksptrace.studies.decisions.cart import CartResult, cart_tree
from ksptrace.studies.decisions.codegen import c_source
from ksptrace.studies.decisions.encoding import EncodingChoice, compact_square_map
from ksptrace.studies.decisions.maps import DecisionMap, SquareMap
from ksptrace.studies.decisions.next_points import Suggestions, suggest_next
from ksptrace.studies.decisions.quadtree import Penalty, QuadTree, build_quadtree, penalty

THRESHOLDS: tuple[float, ...] = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
"""Accuracy thresholds of the threshold-limited trees (the paper's Figure 4 spans 0.1-1)."""


@dataclass(frozen=True)
class TreeRow:
    """One quadtree of a sweep: how it was limited, its shape and its penalty."""

    limit: str
    """"depth" or "threshold"."""
    value: float
    """The maximum depth, or the accuracy threshold."""
    tree: QuadTree
    penalty: Penalty
    penalty_min: float
    c_lines: int
    """Lines of the generated C decision function (the paper's "function size")."""


@dataclass(frozen=True)
class Region:
    """A leaf of a quadtree as a rectangle of measured values with one method."""

    method: str
    axis1_values: tuple[float, ...]
    """The measured values of the first axis the region covers (a contiguous run)."""
    axis2_values: tuple[float, ...]
    axis1_upper: float | None
    """The next measured value above the region (exclusive bound), None at the top edge."""
    axis2_upper: float | None
    depth: int


@dataclass(frozen=True)
class DecisionStudy:
    """Everything ``ksptrace decide`` and the report show about one decision map."""

    title: str
    dm: DecisionMap
    square: SquareMap
    exact: TreeRow
    by_depth: tuple[TreeRow, ...]
    """Depth limits 0 .. the exact tree's depth (the paper's Table 3 and Figure 2)."""
    by_threshold: tuple[TreeRow, ...]
    """Accuracy thresholds ``THRESHOLDS`` with no depth limit (Figure 5's second curve)."""
    single: TreeRow
    """Depth 0 with the least mean relative time: the best single method on average."""
    chosen: TreeRow
    """The tree the generated code, options files and regions are written from."""
    regions: tuple[Region, ...]
    cart: tuple[CartResult, ...]
    """CART with each depth-limited quadtree's number of leaves (empty without scikit-learn)."""
    next_points: Suggestions
    """Where to measure next (``decision_next``)."""
    encoding: EncodingChoice | None = None
    """The square map's encoding and the exact tree's leaves under each (``square`` is the
    chosen one)."""


def _row(limit: str, value: float, tree: QuadTree, dm: DecisionMap) -> TreeRow:
    p = penalty(tree, dm)
    known = p.per_cell[np.isfinite(p.per_cell)]
    return TreeRow(limit, value, tree, p,
                   float(known.min()) if known.size and not p.unknown else float("nan"),
                   c_source(tree, batch=False).count("\n"))


def study(dm: DecisionMap, title: str = "", max_depth: int | None = None,
          threshold: float = 1.0, with_cart: bool = True,
          integer_axes: tuple[bool, bool] | None = None) -> DecisionStudy:
    """Build the exact tree and the depth and threshold sweeps; ``max_depth``/``threshold``
    choose the tree whose regions and code are written (default: the exact tree)."""
    if integer_axes is None:
        integer_axes = (bool(np.all(dm.axis1 == np.round(dm.axis1))),
                        bool(np.all(dm.axis2 == np.round(dm.axis2))))
    encoding = compact_square_map(dm)
    square = encoding.square
    exact_tree = build_quadtree(square)
    exact = _row("depth", float(exact_tree.stats.max_depth), exact_tree, dm)
    by_depth = tuple(_row("depth", float(d), build_quadtree(square, max_depth=d), dm)
                     for d in range(exact_tree.stats.max_depth + 1))
    by_threshold = tuple(_row("threshold", t, build_quadtree(square, threshold=t), dm)
                         for t in THRESHOLDS)
    single = _row("depth", 0.0, build_quadtree(square, max_depth=0, leaf="penalty"), dm)
    if max_depth is None and threshold == 1.0:
        chosen = exact
    else:
        tree = build_quadtree(square, max_depth=max_depth, threshold=threshold)
        chosen = _row("depth" if threshold == 1.0 else "threshold",
                      float(max_depth) if threshold == 1.0 and max_depth is not None
                      else threshold, tree, dm)
    cart: tuple[CartResult, ...] = ()
    if with_cart and decision_cart.available():
        cart = tuple(cart_tree(dm, r.tree.stats.leaves) for r in by_depth)
    return DecisionStudy(title, dm, square, exact, by_depth, by_threshold, single, chosen,
                         regions(chosen.tree, square), cart,
                         suggest_next(dm, integer_axes=integer_axes), encoding)


def leaves(tree: QuadTree) -> list[tuple[int, int, int, int, int]]:
    """Every leaf as (first row, first column, side, method index, depth) of the square map."""
    out: list[tuple[int, int, int, int, int]] = []
    stack = [(0, 0, 0, 1 << tree.k, 0)]
    while stack:
        node, r0, c0, s, d = stack.pop()
        v = int(tree.code[node])
        if v < 0:
            out.append((r0, c0, s, -1 - v, d))
            continue
        h = s // 2
        stack.extend([(v + 3, r0 + h, c0 + h, h, d + 1), (v + 2, r0 + h, c0, h, d + 1),
                      (v + 1, r0, c0 + h, h, d + 1), (v, r0, c0, h, d + 1)])
    out.sort(key=lambda leaf: (leaf[0], leaf[1]))
    return out


def regions(tree: QuadTree, square: SquareMap) -> tuple[Region, ...]:
    """The leaves as rectangles of measured values. A leaf that holds only replicas of rows or
    columns already owned by another leaf covers no measured value of its own and is left out
    (queries never reach it: a value always reads the last replica of its row)."""
    dm = square.source
    out: list[Region] = []
    last_row = _owner(square.row_source)
    last_col = _owner(square.col_source)
    for r0, c0, s, method, depth in leaves(tree):
        rows = sorted({int(square.row_source[r]) for r in range(r0, r0 + s)
                       if last_row[int(square.row_source[r])] == r})
        cols = sorted({int(square.col_source[c]) for c in range(c0, c0 + s)
                       if last_col[int(square.col_source[c])] == c})
        if not rows or not cols:
            continue
        out.append(Region(
            method=tree.methods[method],
            axis1_values=tuple(float(dm.axis1[i]) for i in rows),
            axis2_values=tuple(float(dm.axis2[j]) for j in cols),
            axis1_upper=float(dm.axis1[rows[-1] + 1]) if rows[-1] + 1 < dm.axis1.size else None,
            axis2_upper=float(dm.axis2[cols[-1] + 1]) if cols[-1] + 1 < dm.axis2.size else None,
            depth=depth))
    return tuple(out)


def _owner(source: np.ndarray) -> dict[int, int]:
    """Measured index -> the last map row (or column) that copies it: the one queries read."""
    owner: dict[int, int] = {}
    for r, i in enumerate(source.tolist()):
        owner[int(i)] = r
    return owner
