"""Two-sample Kolmogorov–Smirnov tests between the iteration times of ranks.

The statistic is the largest gap between two empirical distribution functions, both evaluated
right-continuously at every sample point (the definition ``scipy.stats.ks_2samp`` uses). The
test of one rank against all others sorts every rank once and merges it with the sorted
reference rank, so that P - 1 tests cost about one sort of the whole trace plus linear merges.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats.ordered import sort_rows
from ksptrace.studies.variability.stats.refindex import RefIndex, ref_index

__all__ = ["KSOneVsAll", "KSPairwise", "KSTest", "compare", "compare_ranks", "critical_value",
           "one_vs_all", "pairwise", "sort_rows", "statistic", "threshold"]

ROWS_PER_CHUNK_ELEMENTS = 1 << 14
"""About this many samples are processed at once per thread. Small enough that the block's
temporaries (int64, 128 KB) come from the heap: larger ones are mapped afresh by malloc each
time, and at 1 M values a block the page faults cost 0.3 s of system time at paper scale."""
INDEX_ELEMENTS = 1 << 20
"""Sorted rows of at least this many values are counted through a table (:mod:`.refindex`),
which takes a few tens of milliseconds to make."""
THREAD_ELEMENTS = 1 << 20
"""One-vs-all tests of fewer samples run in the calling thread (a pool costs more there)."""
DEFAULT_WORKERS = min(2, os.cpu_count() or 1)
"""Threads for one-vs-all tests (numpy's binary search releases the GIL)."""


def critical_value(alpha: float) -> float:
    """The large-sample coefficient c(alpha) of the two-sample KS test."""
    if not 0.0 < alpha < 1.0:
        raise AnalysisError(f"alpha must be in (0, 1), got {alpha}; 0.05 is the usual choice")
    return float(np.sqrt(-0.5 * np.log(alpha / 2.0)))


def threshold(n: int, m: int, alpha: float) -> float:
    """Reject equality of distributions when D exceeds c(alpha) * sqrt((n + m) / (n m))."""
    if n < 1 or m < 1:
        raise AnalysisError(f"both samples need at least one value, got sizes {n} and {m}")
    return critical_value(alpha) * float(np.sqrt((n + m) / (n * m)))


@dataclass(frozen=True)
class KSTest:
    """One two-sample test."""

    statistic: float
    threshold: float
    alpha: float
    n: int
    m: int

    @property
    def rejected(self) -> bool:
        """True when the two samples are judged to come from different distributions."""
        return self.statistic > self.threshold


@dataclass(frozen=True)
class KSOneVsAll:
    """Rank ``reference`` tested against every other rank."""

    reference: int
    others: np.ndarray
    """int64 [P-1]: the ranks compared with ``reference``."""
    statistics: np.ndarray
    """float64 [P-1]: D of each comparison."""
    threshold: float
    alpha: float
    n: int
    """Samples per rank."""

    @property
    def rejected(self) -> np.ndarray:
        return self.statistics > self.threshold

    @property
    def fraction_rejected(self) -> float:
        """Fraction of the P - 1 pairs whose equality is rejected at level alpha."""
        return float(self.rejected.mean())


def _check_sample(x: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64).ravel()
    if a.size == 0:
        raise AnalysisError(f"{what} is empty; the KS test needs at least one value per sample")
    if not np.isfinite(a).all():
        raise AnalysisError(f"{what} holds NaN or inf; drop the bad trace before testing")
    return a


def statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample KS statistic D = sup |F_a - F_b| (equal to scipy's ``ks_2samp``)."""
    sa = np.sort(_check_sample(a, "sample a"))
    sb = np.sort(_check_sample(b, "sample b"))
    both = np.concatenate([sa, sb])
    ca = np.searchsorted(sa, both, side="right")
    cb = np.searchsorted(sb, both, side="right")
    n, m = sa.size, sb.size
    gap = np.abs(ca * m - cb * n).max()
    return float(gap / (n * m))


def compare(a: np.ndarray, b: np.ndarray, alpha: float = 0.05) -> KSTest:
    """Two-sample KS test of ``a`` against ``b`` at level ``alpha``."""
    d = statistic(a, b)
    n, m = np.asarray(a).size, np.asarray(b).size
    return KSTest(statistic=d, threshold=threshold(n, m, alpha), alpha=alpha, n=n, m=m)


def compare_ranks(times: np.ndarray, a: int, b: int, alpha: float = 0.05) -> KSTest:
    """Rank ``a`` against rank ``b`` of a [P, K] matrix of iteration times."""
    x = np.asarray(times)
    nprocs = x.shape[0]
    for r in (a, b):
        if not 0 <= r < nprocs:
            raise AnalysisError(f"rank {r} is outside 0..{nprocs - 1}")
    return compare(x[a], x[b], alpha)


def _gaps_to_reference(ref: np.ndarray, block: np.ndarray) -> np.ndarray:
    """K K D for each row of ``block`` against the sorted reference sample ``ref`` (K values
    each): each row sorted, then :func:`_gaps_sorted`."""
    return _gaps_sorted(ref, sort_rows(block))


def _gaps_sorted(ref: np.ndarray, sorted_rows: np.ndarray, index: RefIndex | None = None
                 ) -> np.ndarray:
    """K K D for each sorted row (K values) against the sorted reference ``ref`` (K values).

    With s_j the j-th value of a row (from 0), c_j = #ref <= s_j and l_j = #ref < s_j:
    F_row - F_ref is largest at a row value, (j + 1 - c_j) / K at the last of equal values
    (earlier ones give less); F_ref - F_row is largest just below a row value, (l_j - j) / K
    at the first of equal values, or 0 beyond the last. So K D = max_j max(j + 1 - c_j,
    l_j - j): one binary search of each value in the reference (numpy's, over a whole block
    of rows at once) instead of a merge per row, integers throughout, D exact. l_j differs
    from c_j only where s_j is a reference value (a tie, found by one look at ref[c_j - 1]);
    only those are searched again. With ``index`` (:mod:`.refindex`, made for ``ref`` over
    the rows' range), c_j and l_j come from its table, the same integers.
    """
    k = sorted_rows.shape[1]
    if ref.size != k:
        raise AnalysisError(f"a reference of {ref.size} values against rows of {k}; the "
                            "one-vs-all test compares samples of one size")
    if index is not None:
        c, flat, left = index.counts(sorted_rows)
        d = c - np.arange(k)  # c_j - j
        below = 1 - d.min(axis=1)  # max_j (j + 1 - c_j)
        if flat.size:  # l_j differs from c_j only in the cells that hold a reference value
            rows, cols = np.divmod(flat, k)
            d[rows, cols] = left - cols
        return k * np.maximum(below, np.maximum(d.max(axis=1), 0)).astype(np.int64)
    c = np.searchsorted(ref, sorted_rows, side="right")
    d = c - np.arange(k)  # c_j - j
    below = 1 - d.min(axis=1)  # max_j (j + 1 - c_j)
    tie = np.take(ref, c - 1) == sorted_rows  # c_j = 0 looks at ref[-1] > s_j: no tie
    if tie.any():  # l_j = c_j - (copies of s_j in ref)
        where = np.nonzero(tie)
        d[where] = np.searchsorted(ref, sorted_rows[where], side="left") - where[1]
    above = np.maximum(d.max(axis=1), 0)  # max(max_j (l_j - j), 0)
    return k * np.maximum(below, above).astype(np.int64)


def one_vs_all(
    times: np.ndarray,
    reference: int = 0,
    alpha: float = 0.05,
    progress: Callable[[float], None] | None = None,
    workers: int = DEFAULT_WORKERS,
    ordered: np.ndarray | None = None,
) -> KSOneVsAll:
    """Test rank ``reference`` against each other rank of a [P, K] matrix of iteration times.

    Blocks of rows are handled by ``workers`` threads; the result does not depend on it.
    ``ordered``: the rows of ``times`` each sorted already (``ordered.order_rows``, finite),
    so that they are not sorted again.
    """
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 2:
        raise AnalysisError(f"times must be [P, K], got shape {x.shape}")
    nprocs, k = x.shape
    if nprocs < 2:
        raise AnalysisError("a rank-vs-rank KS test needs P >= 2; this trace has one rank")
    if not 0 <= reference < nprocs:
        raise AnalysisError(f"reference rank {reference} is outside 0..{nprocs - 1}")
    if ordered is not None and ordered.shape != x.shape:
        raise AnalysisError(f"sorted rows of shape {ordered.shape} do not match times {x.shape}")
    ref = np.sort(_check_sample(x[reference], f"rank {reference}"))
    index = None
    if ordered is not None and ordered.size >= INDEX_ELEMENTS:
        index = ref_index(ref, min(float(ordered[:, 0].min()), float(ref[0])),
                          max(float(ordered[:, -1].max()), float(ref[-1])))
    gaps = np.empty(nprocs, dtype=np.int64)
    chunk = max(1, ROWS_PER_CHUNK_ELEMENTS // max(k, 1))
    starts = range(0, nprocs, chunk)

    def one_block(start: int) -> int:
        if ordered is not None:  # checked finite when sorted
            rows = ordered[start : start + chunk]
            gaps[start : start + rows.shape[0]] = _gaps_sorted(ref, rows, index)
            return int(rows.shape[0])
        block = x[start : start + chunk]
        if not np.isfinite(block).all():
            raise AnalysisError("iteration times hold NaN or inf; drop the bad trace first")
        gaps[start : start + block.shape[0]] = _gaps_to_reference(ref, block)
        return int(block.shape[0])

    done = 0
    if x.size < THREAD_ELEMENTS or workers <= 1:  # a small trace: no thread to start
        for start in starts:
            done += one_block(start)
        if progress is not None:
            progress(1.0)
    else:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for rows in pool.map(one_block, starts):
                done += rows
                if progress is not None:
                    progress(done / nprocs)
    others = np.delete(np.arange(nprocs, dtype=np.int64), reference)
    stats = np.delete(gaps, reference) / float(k * k)
    stats.setflags(write=False)
    others.setflags(write=False)
    return KSOneVsAll(
        reference=reference,
        others=others,
        statistics=stats,
        threshold=threshold(k, k, alpha),
        alpha=alpha,
        n=k,
    )


@dataclass(frozen=True)
class KSPairwise:
    """Every pair of a set of ranks tested against each other."""

    ranks: np.ndarray
    """int64 [R]: the ranks compared (rows and columns of ``statistics``)."""
    statistics: np.ndarray
    """float64 [R, R]: D of each pair, symmetric, 0 on the diagonal."""
    threshold: float
    alpha: float
    n: int
    """Samples per rank."""

    @property
    def rejected(self) -> np.ndarray:
        """bool [R, R]: pairs judged to come from different distributions (diagonal False)."""
        return self.statistics > self.threshold

    @property
    def fraction_rejected(self) -> float:
        """Fraction of the R (R - 1) / 2 distinct pairs rejected at level alpha."""
        upper = np.triu_indices(self.ranks.size, k=1)
        return float(self.rejected[upper].mean()) if upper[0].size else 0.0


def pairwise(
    times: np.ndarray, ranks: np.ndarray | None = None, alpha: float = 0.05
) -> KSPairwise:
    """The KS statistic D of every pair among ``ranks`` (default: all) of a [P, K] matrix.

    Every rank is sorted once; each pair is then one linear merge of two sorted ranks.
    """
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise AnalysisError(f"times must be [P, K >= 1], got shape {x.shape}")
    chosen = np.arange(x.shape[0]) if ranks is None else np.asarray(ranks, dtype=np.int64)
    if chosen.ndim != 1 or chosen.size < 2:
        raise AnalysisError(
            f"pairwise KS tests need at least two ranks, got {chosen.size}; P = 1 has no pairs"
        )
    if chosen.min() < 0 or chosen.max() >= x.shape[0] or np.unique(chosen).size != chosen.size:
        raise AnalysisError(
            f"ranks must be distinct and within 0..{x.shape[0] - 1}, got {chosen.tolist()}"
        )
    rows = _check_sample(x[chosen], "iteration times").reshape(chosen.size, x.shape[1])
    k = rows.shape[1]
    d = np.zeros((chosen.size, chosen.size))
    ordered = np.sort(rows, axis=1)  # each rank sorted once, merged with every later one
    for i in range(chosen.size - 1):
        d[i, i + 1 :] = _gaps_sorted(ordered[i], ordered[i + 1 :]) / float(k * k)
    d += d.T
    d.setflags(write=False)
    chosen = chosen.copy()
    chosen.setflags(write=False)
    return KSPairwise(
        ranks=chosen, statistics=d, threshold=threshold(k, k, alpha), alpha=alpha, n=k
    )
