"""Every contiguous piece's straight-line fit, and the optimal partition into pieces.

The step fits (``steps.py``, ``shared_steps.py``) score every run of consecutive sizes
``m[i:j]`` as a piece ``f(m) = v + s (m - m_i)`` (v its value where it starts, at 0 for the first
piece; s its slope; both >= 0) by weighted relative least squares, then choose the partition of
the sorted sizes into k + 1 pieces of least total cost for every k (dynamic programming).

A piece has two coefficients, so its non-negative least squares has a closed form: the
optimum is the best feasible one of the unconstrained solution, the two one-coefficient
solutions and zero (each the optimum on one face of the feasible quadrant; the problem is
convex). With the sums of each start's pieces taken cumulatively, all n^2 / 2 pieces cost a few
numpy operations per start: 76 sizes in about 3 ms, against 0.2 s through ``scipy.optimize.nnls``
one piece at a time (``tests/studies/collectives/test_pieces.py`` checks the two agree).

Pure: numpy arrays in, arrays and a frozen dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PieceTable:
    """``[i, j]``: the piece of sizes ``m[i:j]`` (NaN, and a cost of inf, where it holds fewer
    than the minimum of sizes)."""

    intercept: np.ndarray
    """Its value at m = 0 (``v - s m_i``; negative where it rises faster than in proportion)."""
    slope: np.ndarray
    rss: np.ndarray
    """Its weighted sum of squared relative residuals."""


def piece_table(m: np.ndarray, t: np.ndarray, w: np.ndarray, min_piece: int) -> PieceTable:
    """Every piece of ``min_piece`` or more consecutive sizes of the sorted ``m`` with values
    ``t`` > 0 and weights ``w`` (residual ``w (f(m) / t - 1)``)."""
    n = m.size
    intercept = np.full((n, n + 1), np.nan)
    slope = np.full((n, n + 1), np.nan)
    rss = np.full((n, n + 1), np.inf)
    u = w / t
    for i in range(n - min_piece + 1):
        origin = m[i] if i else 0.0
        d = m[i:] - origin
        uu, uw = u[i:] ** 2, u[i:] * w[i:]
        a11, a12, a22 = np.cumsum(uu), np.cumsum(uu * d), np.cumsum(uu * d * d)
        b1, b2, yy = np.cumsum(uw), np.cumsum(uw * d), np.cumsum(w[i:] ** 2)
        keep = slice(min_piece - 1, None)
        a11, a12, a22, b1, b2, yy = (x[keep] for x in (a11, a12, a22, b1, b2, yy))
        det = a11 * a22 - a12 ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            v_both = (a22 * b1 - a12 * b2) / det
            s_both = (a11 * b2 - a12 * b1) / det
            v_only = np.maximum(b1 / a11, 0.0)
            s_only = np.where(a22 > 0, np.maximum(b2 / a22, 0.0), 0.0)
        both_ok = (det > 0) & (v_both >= 0) & (s_both >= 0)
        candidates = np.stack([np.where(both_ok, yy - v_both * b1 - s_both * b2, np.inf),
                               yy - v_only * b1, yy - s_only * b2])
        best = np.argmin(candidates, axis=0)
        v = np.choose(best, [np.where(both_ok, v_both, 0.0), v_only, np.zeros_like(v_only)])
        s = np.choose(best, [np.where(both_ok, s_both, 0.0), np.zeros_like(s_only), s_only])
        columns = slice(i + min_piece, n + 1)
        intercept[i, columns] = v - s * origin
        slope[i, columns] = s
        rss[i, columns] = np.maximum(np.min(candidates, axis=0), 0.0)
    return PieceTable(intercept, slope, rss)


Partitions = list[tuple[np.ndarray, np.ndarray]]
"""Per number of breaks k: the least cost of sizes ``[:j]`` in k + 1 pieces, and where the last
of them starts (both indexed by j)."""


def partitions(cost: np.ndarray, max_breaks: int) -> Partitions:
    """The optimal partition of the n sorted sizes into 1 .. max_breaks + 1 contiguous pieces,
    ``cost[i, j]`` each ([n, n + 1], inf where no piece); rows stop where no more pieces fit.
    Ties go to the earliest start."""
    n = cost.shape[0]
    best: Partitions = [(cost[0].copy(), np.zeros(n + 1, np.int64))]
    for _ in range(max_breaks):
        total = best[-1][0][:n, None] + cost
        row = (total.min(axis=0), total.argmin(axis=0))
        if not np.isfinite(row[0][n]):
            break
        best.append(row)
    return best


def piece_starts(best: Partitions, k: int, n: int) -> list[int]:
    """Where each of the k + 1 pieces of the best partition of all n sizes starts."""
    starts, j = [], n
    for level in range(k, -1, -1):
        i = int(best[level][1][j])
        starts.append(i)
        j = i
    return starts[::-1]
