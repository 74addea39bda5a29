"""Quadtree encoding of a square decision map, its statistics, penalty and in-memory queries.

Construction follows Pjesivac-Grbovic, Fagg and Dongarra (2006): a block becomes a leaf when it
is a single cell, when it sits at the maximum depth, or when the share of its cells held by its
majority method reaches the accuracy threshold. The cells counted are those a query reads: one
copy (the last) of each measured row and column, so that every measured cell counts once,
whatever the encoding replicated (a block no query reads is one leaf); the paper counts every
copy. Threshold 1.0 and no depth limit give the exact tree. A leaf takes its block's majority
method (the paper's rule) or, with ``leaf="penalty"``, the method with the smallest mean time
relative to each cell's best (fewest lost seconds in relative terms; at depth 0 this is the
best method on average).

The tree is one flat int32 array, ``code``, in breadth-first order: an internal node holds the
index of the first of its four children (stored together: low-low, low-high, high-low,
high-high in (row, column) halves), a leaf holds ``-1 - method``. There is no Python object per
node; the compact tree costs 4 bytes per node.

Queries follow the paper's boundary rule: values below the smallest measured value of an axis
use the smallest, values above the largest use the largest, and a value between two measured
values uses the lower one (the last measured value not above it). The measured index is turned
into the map row that the tree reads (the last replica of that row) and the row and column bits
are interleaved once (a Morton code), so that the descent reads two bits per level.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions.axis_index import AxisIndex, axis_index
from ksptrace.studies.decisions.maps import DecisionMap, SquareMap

LeafRule = Literal["majority", "penalty"]
MAX_K = 15
"""Largest map side 2^k: a cell's Morton code (2 k bits) must fit an int32."""
CHUNK = 1 << 15
"""Points per pass of the vectorised query (keeps the working arrays in cache)."""


@dataclass(frozen=True)
class TreeStats:
    """Size and shape of a quadtree. Depth counts edges: the root alone has depth 0."""

    nodes: int
    leaves: int
    max_depth: int
    min_leaf_depth: int
    mean_depth: float
    """Mean depth over leaves (the paper's Tables 3 and 4)."""
    mean_cell_depth: float
    """Mean depth over the measured grid's cells: the comparisons of a query at a uniformly
    random grid point."""
    bytes: int
    """The flat tree (4 bytes per node) plus the two axes' lookup tables."""


@dataclass(frozen=True)
class Penalty:
    """Per measured cell: time of the method the tree chooses over the cell's best, minus 1."""

    per_cell: np.ndarray
    """float64 [n1, n2]; NaN in filled cells and where the chosen method was not measured."""
    mean: float
    """Over the measured cells; NaN when ``unknown`` (a choice never run in a cell is "not
    run there", never a penalty of 0 %)."""
    max: float
    median: float
    unknown: int
    """Measured cells whose penalty cannot be computed (the chosen method was not run there)."""

    def text(self, which: str = "mean") -> str:
        """The ``mean``, ``max`` or ``median`` in per cent ("3.2 %"), or "not run in 1 of 9
        measured cells" when the choice never ran in some of them."""
        if self.unknown:
            cells = int(np.isfinite(self.per_cell).sum()) + self.unknown
            return f"not run in {self.unknown} of {cells} measured cells"
        return f"{round(100.0 * float(getattr(self, which)), 2):g} %"


@dataclass(frozen=True)
class QuadTree:
    """A decision quadtree over a square map, with everything a query needs."""

    code: np.ndarray
    """int32 [nodes]: first child index of an internal node, ``-1 - method`` at a leaf."""
    k: int
    """The map is 2^k x 2^k."""
    axis1: np.ndarray
    axis2: np.ndarray
    axis_names: tuple[str, str]
    methods: tuple[str, ...]
    row_key: np.ndarray
    """int32 [n1 + 1]: Morton bits (odd bits) of the map row read by a value whose
    ``searchsorted(axis1, a, "right")`` is the index; index 0 (below the range) reads as 1."""
    col_key: np.ndarray
    """int32 [n2 + 1]: the same for the columns (even bits)."""
    row_source: np.ndarray
    col_source: np.ndarray
    max_depth_limit: int | None
    threshold: float
    leaf: LeafRule
    stats: TreeStats
    children: np.ndarray = field(repr=False, compare=False)
    """int32 [4 nodes]: the vectorised query's copy of the tree: entry 4 p + q is 4 times the
    index of child q of node p, and a leaf's four children are the leaf itself, so that a fixed
    number of steps ends on every point's leaf."""
    _scalar: tuple[array, array, array, array, array] = field(repr=False, compare=False)
    index1: AxisIndex | None = field(default=None, repr=False, compare=False)
    """Buckets that find a value's row without a binary search (None: use searchsorted)."""
    index2: AxisIndex | None = field(default=None, repr=False, compare=False)

    def query(self, a: float, b: float) -> int:
        """The method index for one point (axis1 = a, axis2 = b)."""
        code, x1, x2, rk, ck = self._scalar
        key = rk[bisect_right(x1, a)] | ck[bisect_right(x2, b)]
        shift = 2 * self.k - 2
        v = code[0]
        while v >= 0:
            v = code[v + ((key >> shift) & 3)]
            shift -= 2
        return -1 - v

    def query_many(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """int64 [N]: the method index for every point (a[i], b[i])."""
        a = np.asarray(a, dtype=np.float64).ravel()
        b = np.asarray(b, dtype=np.float64).ravel()
        if a.shape != b.shape:
            raise AnalysisError(f"query_many needs two arrays of one length, got {a.size} and "
                                f"{b.size} points")
        out = np.empty(a.size, dtype=np.int64)
        node = np.empty(min(a.size, CHUNK), dtype=np.int32)
        step = np.empty_like(node)
        for s in range(0, a.size, CHUNK):
            i = (self.index1.index(a[s:s + CHUNK]) if self.index1 is not None
                 else np.searchsorted(self.axis1, a[s:s + CHUNK], side="right"))
            j = (self.index2.index(b[s:s + CHUNK]) if self.index2 is not None
                 else np.searchsorted(self.axis2, b[s:s + CHUNK], side="right"))
            key = self.row_key[i] | self.col_key[j]
            n = key.size
            node[:n] = 0
            for d in range(self.stats.max_depth):
                np.right_shift(key, 2 * (self.k - 1 - d), out=step[:n])
                np.bitwise_and(step[:n], 3, out=step[:n])
                np.add(step[:n], node[:n], out=step[:n])
                np.take(self.children, step[:n], out=node[:n])
            out[s:s + n] = -1 - self.code[node[:n] >> 2]
        return out

    def decisions(self) -> np.ndarray:
        """int64 [n1, n2]: the tree's method at every measured grid point."""
        aa, bb = np.meshgrid(self.axis1, self.axis2, indexing="ij")
        return self.query_many(aa.ravel(), bb.ravel()).reshape(aa.shape)

    def leaf_map(self) -> np.ndarray:
        """int64 [2^k, 2^k]: the method of the leaf covering every cell of the square map."""
        size = 1 << self.k
        out = np.empty((size, size), dtype=np.int64)
        stack = [(0, 0, 0, size)]
        while stack:
            node, r0, c0, s = stack.pop()
            v = int(self.code[node])
            if v < 0:
                out[r0:r0 + s, c0:c0 + s] = -1 - v
                continue
            h = s // 2
            stack.extend([(v, r0, c0, h), (v + 1, r0, c0 + h, h), (v + 2, r0 + h, c0, h),
                          (v + 3, r0 + h, c0 + h, h)])
        return out


def build_quadtree(
    square: SquareMap,
    max_depth: int | None = None,
    threshold: float = 1.0,
    leaf: LeafRule = "majority",
) -> QuadTree:
    """Encode ``square`` as a quadtree limited by depth and/or accuracy threshold."""
    if max_depth is not None and max_depth < 0:
        raise AnalysisError(f"max_depth must be >= 0 or None (no limit), got {max_depth}")
    if not 0.0 < threshold <= 1.0:
        raise AnalysisError(f"the accuracy threshold is a share in (0, 1], got {threshold}; "
                            "1.0 gives the exact tree")
    if leaf not in ("majority", "penalty"):
        raise AnalysisError(f"unknown leaf rule {leaf!r}; choose 'majority' or 'penalty'")
    if square.k > MAX_K:
        raise AnalysisError(f"the map is 2^{square.k} on a side; queries support up to "
                            f"2^{MAX_K} (32768 distinct values per axis)")
    dm = square.source
    n_methods = len(dm.methods)
    one_hot = np.eye(n_methods, dtype=np.float64)[square.cells].transpose(2, 0, 1)
    reached = _reached(square)
    counts = _summed_area(one_hot * reached)
    everywhere = _summed_area(one_hot)
    rel_sum = rel_n = None
    if leaf == "penalty":
        rel = dm.relative_times()[:, square.row_source][:, :, square.col_source]
        rel = np.where(reached > 0, rel, np.nan)
        rel_sum = _summed_area(np.nan_to_num(rel, nan=0.0))
        rel_n = _summed_area(np.isfinite(rel).astype(np.float64))
    code: list[int] = []
    depths: list[int] = []
    cell_depth_sum = 0.0
    queue = [(0, 0, 1 << square.k, 0)]  # (row, col, side, depth), breadth-first
    head = 0
    while head < len(queue):
        r0, c0, s, d = queue[head]
        head += 1
        n = _block(counts, r0, c0, s)
        total = float(n.sum())
        if total == 0:  # no query reads this block: one leaf, its cells' majority
            code.append(-1 - int(np.argmax(_block(everywhere, r0, c0, s))))
            depths.append(d)
            continue
        majority = int(np.argmax(n))
        if s == 1 or d == max_depth or n[majority] >= threshold * total:
            method = majority
            if rel_sum is not None and rel_n is not None:
                method = _least_relative(_block(rel_sum, r0, c0, s), _block(rel_n, r0, c0, s),
                                         majority)
            code.append(-1 - method)
            depths.append(d)
            cell_depth_sum += d * total
            continue
        code.append(len(queue))
        h = s // 2
        queue.extend([(r0, c0, h, d + 1), (r0, c0 + h, h, d + 1), (r0 + h, c0, h, d + 1),
                      (r0 + h, c0 + h, h, d + 1)])
    return _assemble(square, np.asarray(code, dtype=np.int32), np.asarray(depths),
                     cell_depth_sum, max_depth, threshold, leaf)


def penalty(tree: QuadTree, dm: DecisionMap) -> Penalty:
    """Relative slowdown of the tree's choice against the exact map on every measured cell."""
    return penalty_of(tree.decisions(), dm)


def penalty_of(chosen: np.ndarray, dm: DecisionMap) -> Penalty:
    """The penalty of any decisions (int [n1, n2], a method index per grid cell)."""
    chosen = np.asarray(chosen, dtype=np.int64)
    if chosen.shape != dm.shape:
        raise AnalysisError(f"decisions of shape {chosen.shape} for a map of shape {dm.shape}")
    t = np.take_along_axis(dm.times, chosen[None, :, :], axis=0)[0]
    per_cell = t / dm.best_time - 1.0
    measured = ~dm.filled
    known = per_cell[measured & np.isfinite(per_cell)]
    unknown = int((measured & ~np.isfinite(per_cell)).sum())
    if known.size == 0:
        raise AnalysisError("no measured cell has a time for the method chosen there; "
                            "the penalty cannot be computed")
    if unknown:  # not run there: no penalty over the map, not 0 % in the unrun cells (issue 63)
        return Penalty(per_cell=per_cell, mean=math.nan, max=math.nan, median=math.nan,
                       unknown=unknown)
    return Penalty(per_cell=per_cell, mean=float(known.mean()), max=float(known.max()),
                   median=float(np.median(known)), unknown=unknown)


def _assemble(
    square: SquareMap, code: np.ndarray, leaf_depths: np.ndarray, cell_depth_sum: float,
    max_depth: int | None, threshold: float, leaf: LeafRule,
) -> QuadTree:
    dm = square.source
    last_row = _last_replica(square.row_source, dm.axis1.size)
    last_col = _last_replica(square.col_source, dm.axis2.size)
    row_key = (_spread_bits(np.r_[last_row[0], last_row]) << 1).astype(np.int32)
    col_key = _spread_bits(np.r_[last_col[0], last_col]).astype(np.int32)
    stats = TreeStats(
        nodes=int(code.size), leaves=int(leaf_depths.size), max_depth=int(leaf_depths.max()),
        min_leaf_depth=int(leaf_depths.min()), mean_depth=float(leaf_depths.mean()),
        mean_cell_depth=cell_depth_sum / (dm.axis1.size * dm.axis2.size),
        bytes=int(code.nbytes + dm.axis1.nbytes + dm.axis2.nbytes + row_key.nbytes
                  + col_key.nbytes))
    scalar = (array("i", code.tobytes()), array("d", dm.axis1.tobytes()),
              array("d", dm.axis2.tobytes()), array("i", row_key.tobytes()),
              array("i", col_key.tobytes()))
    return QuadTree(
        code=code, k=square.k, axis1=dm.axis1, axis2=dm.axis2, axis_names=dm.axis_names,
        methods=dm.methods, row_key=row_key, col_key=col_key, row_source=square.row_source,
        col_source=square.col_source, max_depth_limit=max_depth, threshold=threshold,
        leaf=leaf, stats=stats, children=4 * _self_looped(code), _scalar=scalar,
        index1=axis_index(dm.axis1), index2=axis_index(dm.axis2))


def _reached(square: SquareMap) -> np.ndarray:
    """float64 [2^k, 2^k]: 1 at the cells queries read (the last copy of each measured row and
    column), 0 at the other copies."""
    dm = square.source
    out = np.zeros((1 << square.k, 1 << square.k))
    out[np.ix_(_last_replica(square.row_source, dm.axis1.size),
               _last_replica(square.col_source, dm.axis2.size))] = 1.0
    return out


def _self_looped(code: np.ndarray) -> np.ndarray:
    """int32 [4 nodes]: the four children of every node; a leaf's are the leaf itself."""
    nodes = np.arange(code.size, dtype=np.int32)
    first = np.where(code >= 0, code, nodes)
    quad = np.where(code[:, None] >= 0, np.arange(4, dtype=np.int32), 0)
    return (first[:, None] + quad).ravel().astype(np.int32)


def _last_replica(source: np.ndarray, n: int) -> np.ndarray:
    """int64 [n]: the last map row (or column) copying each measured row."""
    last = np.empty(n, dtype=np.int64)
    last[source] = np.arange(source.size)
    return last


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """Move bit i of each value to bit 2i (the even bits of a Morton code)."""
    out = np.zeros_like(v)
    for bit in range(31):
        out |= ((v >> bit) & 1) << (2 * bit)
    return out


def _summed_area(x: np.ndarray) -> np.ndarray:
    """Summed-area tables of [m, N, N] stacks, padded with a leading zero row and column."""
    out = np.zeros((x.shape[0], x.shape[1] + 1, x.shape[2] + 1))
    out[:, 1:, 1:] = x.cumsum(axis=1).cumsum(axis=2)
    return out


def _block(sat: np.ndarray, r0: int, c0: int, s: int) -> np.ndarray:
    r1, c1 = r0 + s, c0 + s
    return sat[:, r1, c1] - sat[:, r0, c1] - sat[:, r1, c0] + sat[:, r0, c0]


def _least_relative(total: np.ndarray, n: np.ndarray, fallback: int) -> int:
    """The method with the smallest mean relative time in a block, among the methods measured
    in the most cells of the block (a method run in one lucky cell does not win)."""
    if not (n > 0).any():
        return fallback
    eligible = n == n.max()
    mean = np.where(eligible, total / np.where(eligible, n, 1.0), np.inf)
    return int(np.argmin(mean))
