"""Decision maps: the fastest method in every cell of a grid over two numeric axes.

Measurements are flat arrays: one row per run, with its two axis values (for solvers the number
of processes and the problem size; for collectives the number of processes and the message
size), its method label and its time. The map keeps, per cell and method, the median time of
the repetitions, and per cell the method with the smallest median.

A quadtree needs a complete square map of side 2^k. ``square_map`` reshapes the n1 x n2 grid
in one of two encodings, and the amount of replication is recorded:

- ``even``, the way Pjesivac-Grbovic, Fagg and Dongarra (2006) do: rows and columns are
  replicated evenly, so that every measured row appears once or more. The boundaries between
  replicas fall anywhere, mostly off the quadtree's split lines, so the exact tree must cut
  many blocks that a measured boundary alone would not need;
- ``padded``: measured row i is map row i, and the rows beyond the last measured one repeat
  it (the same for columns). Every boundary between measured rows lies between two map rows,
  and the padding is one uniform block per repeated row or column. The paper lists a better
  replication scheme as future work; this is ksptrace's.

:func:`ksptrace.studies.decisions.encoding.compact_square_map` picks the one whose exact tree
has fewer leaves. Cells where no method was measured are filled beforehand from the nearest measured
cell (Euclidean distance in grid indices) and flagged, so that nothing pretends to be measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.ndimage import distance_transform_edt

from ksptrace.errors import AnalysisError

Encoding = Literal["even", "padded"]
ENCODINGS: tuple[Encoding, ...] = ("even", "padded")

NO_METHOD = -1
"""Marks a cell without any measurement in ``DecisionMap.measured_best``."""


@dataclass(frozen=True)
class DecisionMap:
    """The best method per measured cell, and the median time of every method per cell."""

    axis_names: tuple[str, str]
    axis1: np.ndarray
    """float64 [n1]: the distinct values of the first axis, increasing (the map's rows)."""
    axis2: np.ndarray
    """float64 [n2]: the distinct values of the second axis, increasing (the map's columns)."""
    methods: tuple[str, ...]
    """The method labels, sorted; a method index refers to this tuple."""
    times: np.ndarray
    """float64 [methods, n1, n2]: median time of each method per cell, NaN where not measured."""
    counts: np.ndarray
    """int64 [methods, n1, n2]: repetitions behind each median."""
    best: np.ndarray
    """int64 [n1, n2]: the method with the smallest median, filled cells included."""
    filled: np.ndarray
    """bool [n1, n2]: True where no method was measured and ``best`` is the nearest neighbour's."""

    @property
    def shape(self) -> tuple[int, int]:
        return (self.axis1.size, self.axis2.size)

    @property
    def best_time(self) -> np.ndarray:
        """float64 [n1, n2]: the best median time per cell, NaN in filled cells."""
        return np.where(self.filled, np.nan, np.nanmin(np.where(
            np.isnan(self.times), np.inf, self.times), axis=0))

    def relative_times(self) -> np.ndarray:
        """float64 [methods, n1, n2]: each method's median over the cell's best (>= 1), or NaN."""
        return self.times / self.best_time[None, :, :]


@dataclass(frozen=True)
class SquareMap:
    """A decision map reshaped to 2^k x 2^k by replicating rows and columns."""

    source: DecisionMap
    k: int
    cells: np.ndarray
    """int64 [2^k, 2^k]: method index per cell."""
    row_source: np.ndarray
    """int64 [2^k]: the measured row (index into ``source.axis1``) each map row copies."""
    col_source: np.ndarray
    """int64 [2^k]: the measured column each map column copies."""
    encoding: Encoding = "even"
    """How rows and columns were replicated (see the module's docstring)."""

    @property
    def size(self) -> int:
        return 1 << self.k

    @property
    def replicated_rows(self) -> int:
        """Map rows that repeat a measured row already present."""
        return self.size - self.source.axis1.size

    @property
    def replicated_cols(self) -> int:
        return self.size - self.source.axis2.size

    @property
    def replicated_share(self) -> float:
        """Share of the square map's cells that are copies, not measured cells."""
        n1, n2 = self.source.shape
        return 1.0 - n1 * n2 / float(self.size * self.size)

    @property
    def filled_share(self) -> float:
        """Share of the square map's cells that come from a filled (unmeasured) cell."""
        return float(self.source.filled[np.ix_(self.row_source, self.col_source)].mean())


def decision_map(
    axis1: np.ndarray,
    axis2: np.ndarray,
    methods: np.ndarray,
    times: np.ndarray,
    axis_names: tuple[str, str] = ("axis1", "axis2"),
) -> DecisionMap:
    """Build the decision map of flat measurements (one entry per run)."""
    a1, a2, labels, t = _validated(axis1, axis2, methods, times, axis_names)
    names, m_idx = np.unique(labels, return_inverse=True)
    v1, i_idx = np.unique(a1, return_inverse=True)
    v2, j_idx = np.unique(a2, return_inverse=True)
    if names.size < 2:
        raise AnalysisError(
            f"a decision map needs at least 2 methods, the measurements have only {names[0]!r}; "
            "measure a second method over the same grid")
    for name, values in zip(axis_names, (v1, v2), strict=True):
        if values.size < 2:
            raise AnalysisError(
                f"axis {name!r} has the single value {values[0]:g}; a decision map needs at "
                "least 2 distinct values on each axis (measure at a second value)")
    shape = (names.size, v1.size, v2.size)
    keys = np.asarray(np.ravel_multi_index((m_idx, i_idx, j_idx), shape), dtype=np.int64)
    medians, counts = _group_medians(keys, t, shape)
    masked = np.where(np.isnan(medians), np.inf, medians)
    measured = np.isfinite(masked).any(axis=0)
    best = np.where(measured, np.argmin(masked, axis=0), NO_METHOD)
    filled = ~measured
    if filled.any():
        _, (ni, nj) = distance_transform_edt(filled, return_indices=True)
        best = best[ni, nj]
    return DecisionMap(
        axis_names=(str(axis_names[0]), str(axis_names[1])),
        axis1=v1.astype(np.float64), axis2=v2.astype(np.float64),
        methods=tuple(str(n) for n in names), times=medians, counts=counts,
        best=best.astype(np.int64), filled=filled)


def square_map(dm: DecisionMap, encoding: Encoding = "even") -> SquareMap:
    """Reshape to the smallest 2^k x 2^k that holds both axes, replicating rows and columns
    evenly (the paper's encoding) or padding with the last row and column."""
    n1, n2 = dm.shape
    k = int(np.ceil(np.log2(max(n1, n2))))
    size = 1 << k
    index = np.arange(size, dtype=np.int64)
    if encoding == "even":
        rows, cols = (index * n1) // size, (index * n2) // size
    elif encoding == "padded":
        rows, cols = np.minimum(index, n1 - 1), np.minimum(index, n2 - 1)
    else:
        raise AnalysisError(f"unknown encoding {encoding!r}; use one of {', '.join(ENCODINGS)}")
    return SquareMap(source=dm, k=k, cells=dm.best[np.ix_(rows, cols)], row_source=rows,
                     col_source=cols, encoding=encoding)


def _validated(
    axis1: np.ndarray, axis2: np.ndarray, methods: np.ndarray, times: np.ndarray,
    axis_names: tuple[str, str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    arrays = [np.asarray(a) for a in (axis1, axis2, methods, times)]
    sizes = {a.size for a in arrays}
    if any(a.ndim != 1 for a in arrays) or len(sizes) != 1:
        raise AnalysisError(
            "axis1, axis2, methods and times must be 1-D arrays of one length (one entry per "
            f"run), got shapes {[a.shape for a in arrays]}")
    if sizes == {0}:
        raise AnalysisError("no measurements: a decision map needs at least one run per method")
    a1, a2, labels, t = arrays
    try:
        a1, a2, t = (np.asarray(a, dtype=np.float64) for a in (a1, a2, t))
    except (TypeError, ValueError) as exc:
        raise AnalysisError(f"axis values and times must be numbers: {exc}") from None
    for name, a in zip(axis_names, (a1, a2), strict=True):
        if not np.isfinite(a).all():
            raise AnalysisError(f"axis {name!r} has {int((~np.isfinite(a)).sum())} non-finite "
                                "values; every run needs a finite value on both axes")
    bad = ~np.isfinite(t)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise AnalysisError(
            f"{int(bad.sum())} of {t.size} times are NaN or infinite (the first: run {first}, "
            f"method {labels[first]!r}, {axis_names[0]}={a1[first]:g}, "
            f"{axis_names[1]}={a2[first]:g}); drop those runs or measure them again")
    if (t <= 0).any():
        raise AnalysisError(f"{int((t <= 0).sum())} times are zero or negative; times must be "
                            "positive durations (the penalty divides by them)")
    return a1, a2, labels, t


def _group_medians(
    keys: np.ndarray, t: np.ndarray, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Median and count of ``t`` per flat cell key, NaN and 0 where a cell has no sample."""
    order = np.lexsort((t, keys))
    k, s = keys[order], t[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    n = np.diff(np.r_[starts, k.size])
    med = 0.5 * (s[starts + (n - 1) // 2] + s[starts + n // 2])
    size = int(np.prod(shape))
    medians = np.full(size, np.nan)
    counts = np.zeros(size, dtype=np.int64)
    medians[k[starts]] = med
    counts[k[starts]] = n
    return medians.reshape(shape), counts.reshape(shape)
