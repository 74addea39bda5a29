"""Each rank's kept iteration times sorted once, shared by the KS tests, the histograms of all
kept times and their time axis (issue 51, paper scale).

A histogram of every kept time is a pass over all of them: at 8192 x 5000 that is 41 M values
and about 0.3 s, and one trace drew four (the fits' histogram, the bulk and restart-cycle
figures, the digest's log-binned one). The KS tests sort every rank anyway; on sorted rows a
histogram is a binary search of its bin edges in each row, P searches of about a hundred edges.

The counts are the same integers ``np.histogram`` gives. It puts a value v in bin i when
``edges[i] <= v < edges[i + 1]`` (the last bin closed), its edges ``np.linspace(lo, hi, bins +
1)``, so a bin's count is a difference of two counts "v >= t", and in sorted rows those are
binary searches. Log bins (``np.histogram(np.log10(x))``) become thresholds in seconds: the
least float64 t with ``np.log10(t) >= e``, found next to ``10**e`` by stepping one ulp at a time
(``log10`` is monotone). Values below a floor are counted apart and values above a ceiling are
clipped to it, as :func:`figures.binned_counts` does.

Memory: one more [P, K] float64 array (328 MB at paper scale) while a trace is analysed and
drawn; the unsorted times are kept beside it, not copied.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError

SORT_BLOCK_ELEMENTS = 1 << 18
"""Rows are sorted in blocks of about this many values, one block per thread at a time."""
SORT_WORKERS = min(2, os.cpu_count() or 1)
"""Threads that sort (numpy's sort releases the interpreter lock)."""
MAX_ULP_STEPS = 64
"""A log threshold is at most this many ulps from 10**e (a few, for a faithful log10)."""


def sort_rows(block: np.ndarray) -> np.ndarray:
    """Each row of a finite float64 [R, K] block sorted: ``np.sort(block, axis=1)``.

    Times are not negative, and the bits of non-negative float64 values order as int64
    integers do, which numpy sorts in about two thirds of the time (no NaN to place): 0.9 s of
    CPU less at paper scale. A -0.0 (the integer sign bit) goes first, where it belongs among
    values equal to 0.0. Rows with a negative value (first after the integer sort) are sorted
    again as floats.
    """
    x = np.asarray(block, dtype=np.float64)
    if x.ndim != 2:
        raise AnalysisError(f"sort_rows needs a [R, K] block, got shape {x.shape}")
    out = np.empty_like(x)
    _sort_into(out, x)
    return out


def _sort_into(out: np.ndarray, x: np.ndarray) -> None:
    """``out[:] = sort_rows(x)``, sorted in place in ``out`` (no temporary: a fresh array per
    block cost 0.4 s of page faults at paper scale)."""
    np.copyto(out, x)
    if out.size == 0:
        return
    out.view(np.int64).sort(axis=1)
    negative = np.flatnonzero(out[:, 0] < 0.0)
    if negative.size:
        out[negative] = np.sort(x[negative], axis=1)


def log_thresholds(exponents: np.ndarray) -> np.ndarray:
    """For each e, the least float64 t with ``np.log10(t) >= e``: then ``log10(x) >= e``
    exactly when ``x >= t``, for every float64 x (log10 is monotone)."""
    e = np.asarray(exponents, dtype=np.float64)
    if not np.isfinite(e).all():
        raise AnalysisError(f"log bin edges must be finite, got {e.tolist()}")
    t = np.power(10.0, e)
    with np.errstate(divide="ignore", over="ignore"):
        for _ in range(MAX_ULP_STEPS):
            low = np.log10(t) < e
            if not low.any():
                break
            t = np.where(low, np.nextafter(t, np.inf), t)
        for _ in range(MAX_ULP_STEPS):
            below = np.nextafter(t, 0.0)
            lower = (t > 0.0) & (np.log10(below) >= e)
            if not lower.any():
                return t
            t = np.where(lower, below, t)
    raise AnalysisError(f"no log threshold within {MAX_ULP_STEPS} ulps of 10**e for {e}")


@dataclass(frozen=True, eq=False)
class OrderedRows:
    """A [P, K] block of iteration times (``raw``) and each of its rows sorted (``rows``)."""

    raw: np.ndarray
    """float64 [P, K]: the times as recorded (kept columns), not a copy."""
    rows: np.ndarray
    """float64 [P, K]: each row of ``raw`` in ascending order, read-only."""

    @property
    def size(self) -> int:
        return int(self.rows.size)

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows.shape  # type: ignore[return-value]

    def min(self) -> float:
        return float(self.rows[:, 0].min())

    def max(self) -> float:
        return float(self.rows[:, -1].max())

    def firsts(self, thresholds: np.ndarray) -> np.ndarray:
        """int64 [P, T]: in each row, the index of the first value >= each threshold."""
        t = np.asarray(thresholds, dtype=np.float64).ravel()
        out = np.empty((self.rows.shape[0], t.size), dtype=np.int64)
        for i, row in enumerate(self.rows):
            out[i] = row.searchsorted(t)  # the method: no dispatch, half the cost a row
        return out

    def at_least(self, thresholds: np.ndarray) -> np.ndarray:
        """int64 [T]: how many values are >= each threshold."""
        t = np.asarray(thresholds, dtype=np.float64).ravel()
        below = np.zeros(t.size, dtype=np.int64)
        for row in self.rows:
            below += row.searchsorted(t)
        return self.size - below

    def binned(self, bins: int, lo: float, hi: float, log: bool = False,
               floor: float | None = None, ceiling: float | None = None
               ) -> tuple[np.ndarray, int]:
        """``figures.binned_counts(self.raw, ...)``: the same int64 counts of ``bins`` equal
        bins over [lo, hi] (of log10 of the values when ``log``), with the values below
        ``floor`` left out and counted, and those above ``ceiling`` clipped to it."""
        if bins < 1 or not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
            raise AnalysisError(f"bins over [{lo}, {hi}] ({bins} bins) cannot be counted")
        first, last = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)
        edges = np.linspace(first, last, bins + 1)  # np.histogram's own edges
        # predicates "v >= edges[i]" for each bin's left edge, and "v > edges[-1]"
        cuts = np.append(edges, np.nextafter(edges[-1], np.inf))
        cuts = np.delete(cuts, bins)
        t = log_thresholds(cuts) if log else cuts
        if ceiling is not None:  # min(x, ceiling) >= t when x >= t and ceiling >= t
            t = np.where(ceiling >= t, t, np.inf)
        if floor is not None:  # values below the floor are left out, and counted
            t = np.append(np.maximum(t, floor), floor)
        above = self.at_least(t)
        below = 0
        if floor is not None:
            below, above = self.size - int(above[-1]), above[:-1]
        counts = above[:-1] - above[1:]
        return counts.astype(np.int64), below


def order_rows(values: np.ndarray, workers: int = SORT_WORKERS) -> OrderedRows:
    """Sort each row of a finite, non-negative [P, K] block once (in ``workers`` threads)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise AnalysisError(f"times must be [P, K >= 1], got shape {x.shape}")
    out = np.empty_like(x)
    step = max(1, SORT_BLOCK_ELEMENTS // x.shape[1])
    starts = range(0, x.shape[0], step)

    def one(start: int) -> None:
        _sort_into(out[start:start + step], x[start:start + step])

    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(workers, "ksptrace-sort") as pool:
            list(pool.map(one, starts))
    else:
        for start in starts:
            one(start)
    if not (np.isfinite(out[:, -1]).all() and (out[:, 0] >= 0.0).all()):
        raise AnalysisError("iteration times hold NaN, inf or a negative value; drop the bad "
                            "trace first")
    out.setflags(write=False)
    return OrderedRows(raw=x, rows=out)


Sorted = OrderedRows | Callable[[], OrderedRows | None] | None
"""Sorted rows for an analysis: made, to be made by a call (so that the caller keeps them for
the figures), or not yet (the analysis sorts)."""


def resolve(ordered: Sorted, values: np.ndarray) -> OrderedRows | None:
    """The rows of ``values`` sorted: given, made by the caller's function, or sorted here
    (None for no values)."""
    rows = ordered() if callable(ordered) else ordered
    if rows is None:
        return order_rows(values) if values.size else None
    if rows.shape != values.shape:
        raise AnalysisError(f"sorted times of shape {rows.shape} given for times of shape "
                            f"{values.shape}; sort the same kept iterations")
    return rows
