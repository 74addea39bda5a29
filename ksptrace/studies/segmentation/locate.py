"""Where the change lies: from the run of heterogeneous windows, by the best two-segment fit
within the run's range, or by the global two-segment split (leave-one-out)."""

from __future__ import annotations

import numpy as np

from ksptrace.studies.segmentation.params import SegmentationParams
from ksptrace.studies.segmentation.pmnf import fit_many, loo_residuals
from ksptrace.studies.segmentation.smooth_law import relative_rss


def locate_run(nrss: np.ndarray, pattern: np.ndarray, w: int) -> tuple[np.ndarray, ...]:
    """Change point from the run of heterogeneous windows around the worst window.

    Returns (lo, hi, clean, first, last): ``clean`` marks the paper's two cases, and every
    change between points c and c+1 with ``first <= c <= last`` agrees with the run.

    With windows of w points, a change between points c and c+1 makes windows c-w+2 .. c
    heterogeneous (w-1 of them, the paper's four ones); a point c shared by both laws makes
    windows c-w+2 .. c-1 heterogeneous (w-2, the paper's three ones).
    """
    S, r = pattern.shape
    rows = np.arange(S)
    anchor = np.argmax(np.where(pattern, nrss, -np.inf), axis=1)
    a = anchor.copy()
    b = anchor.copy()
    go_left = np.ones(S, dtype=bool)
    go_right = np.ones(S, dtype=bool)
    for _ in range(r):
        left_ok = go_left & (a - 1 >= 0)
        left_ok &= pattern[rows, np.maximum(a - 1, 0)]
        a = np.where(left_ok, a - 1, a)
        go_left = left_ok
        right_ok = go_right & (b + 1 <= r - 1)
        right_ok &= pattern[rows, np.minimum(b + 1, r - 1)]
        b = np.where(right_ok, b + 1, b)
        go_right = right_ok
    length = b - a + 1
    at_start = a == 0
    at_end = b == r - 1
    # Middle of the run: the change sits (w - 1)/2 points after the run's centre window start
    # (a half-integer means between two points).
    twice_mid = a + b + w - 1
    lo = twice_mid // 2
    hi = (twice_mid + 1) // 2
    # The paper's two clean cases, when the run is not cut by either end of the data: w - 2 ones
    # for a shared point, w - 1 ones for a change between two points.
    inner = ~at_start & ~at_end
    shared = inner & (length == w - 2)
    between = inner & (length == w - 1)
    lo = np.where(shared | between, a + w - 2, lo)
    hi = np.where(shared, a + w - 2, np.where(between, a + w - 1, hi))
    # A run cut by one end of the data is read from its other end: the last heterogeneous
    # window starts on the last point before the change, the first one w - 2 points before it.
    start_cut = at_start & ~at_end & (length < w - 1)
    end_cut = at_end & ~at_start & (length < w - 1)
    lo = np.where(start_cut, b, np.where(end_cut, a + w - 2, lo))
    hi = np.where(start_cut, b + 1, np.where(end_cut, a + w - 1, hi))
    n = r + w - 1
    lo = np.clip(lo, 0, n - 1)
    hi = np.clip(hi, 0, n - 1)
    # Every window of the run must straddle the change: a change between c and c+1 lies in
    # window s when s <= c <= s + w - 2, so c runs from b to a + w - 2 (widened if the run is
    # longer than the pattern allows, which happens when noise lifts neighbouring windows).
    # Widened by one point on each side: a window holding only one point of the other law
    # often looks homogeneous, and noise lifts a neighbouring window.
    first = np.clip(np.minimum(b, a + w - 2) - 1, 0, n - 2)
    last = np.clip(np.maximum(b, a + w - 2) + 1, 0, n - 2)
    clean = shared | between
    return lo.astype(np.int64), hi.astype(np.int64), clean, first, last


def best_split(
    pts: np.ndarray, ys: np.ndarray, first: np.ndarray, last: np.ndarray, prm: SegmentationParams
) -> np.ndarray:
    """For each row, the c in [first, last] whose two segment laws, fitted on relative
    residuals (``smooth_law.relative_rss``), leave the smallest sum of squared relative
    residuals (sides of fewer than 3 points fit exactly)."""
    S, n = ys.shape
    cost = np.full((S, n - 1), np.inf)
    for c in range(int(first.min()), int(last.max()) + 1):
        rows = np.flatnonzero((first <= c) & (c <= last))
        if rows.size == 0:
            continue
        total = np.zeros(rows.size)
        for sl in (slice(0, c + 1), slice(c + 1, n)):
            if pts[sl].size >= 3:
                total += relative_rss(pts[sl], ys[rows, sl])
        cost[rows, c] = total
    return np.argmin(cost, axis=1).astype(np.int64)


def global_split(
    pts: np.ndarray, ys: np.ndarray, prm: SegmentationParams
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, (gain, c): the single model's leave-one-out error divided by that of the best
    two-segment model, which splits between points c and c+1."""
    S, n = ys.shape
    single = _loo_error(pts, ys, prm)
    best = np.full(S, np.inf)
    where = np.zeros(S, dtype=np.int64)
    m = prm.split_min_side
    for c in range(m - 1, n - m):
        cost = _loo_error(pts[: c + 1], ys[:, : c + 1], prm)
        cost += _loo_error(pts[c + 1 :], ys[:, c + 1 :], prm)
        better = cost < best
        best = np.where(better, cost, best)
        where = np.where(better, c, where)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(best > 0, single / best, np.where(single > 0, np.inf, 1.0))
    return gain, where


def _loo_error(pts: np.ndarray, ys: np.ndarray, prm: SegmentationParams) -> np.ndarray:
    """Sum of squared relative leave-one-out residuals of each row's model (a constant below three
    points, where each point is predicted by the mean of the others)."""
    n = pts.shape[0]
    if n >= 3:
        resid = loo_residuals(fit_many(pts, ys, prm.criterion), ys)
    else:
        resid = ys - (ys.sum(axis=1, keepdims=True) - ys) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = resid / np.abs(ys)
    return np.sum(np.where(np.isfinite(rel), rel, 0.0) ** 2, axis=1)


def core_count_split(
    pts: np.ndarray, y: np.ndarray, cores: int, prm: SegmentationParams
) -> tuple[int, float] | None:
    """(c, gain) when a sweep over process counts changes where the ranks outnumber the cores.

    The one change a sweep on a machine of ``cores`` cores is known to cross: beyond it ranks
    share cores. Asked only when the detector found nothing. It holds when the best global
    two-segment split (``global_split``) falls exactly between p = ``cores`` and the next p,
    cuts the single model's leave-one-out error by more than ``split_gain``, and the best
    single smooth law misses by more than ``confirm_rms``. With two points before the knee
    (a 2-core machine) the window tests cannot see it, and a smooth law with a log term can
    imitate a flat start; the known location is what tells the two apart.
    """
    from ksptrace.studies.segmentation.smooth_law import smooth_fit

    c = int(np.searchsorted(pts, cores, side="right")) - 1  # last p <= cores
    m = prm.split_min_side
    if c < m - 1 or c > pts.size - m - 1 or pts[c] != cores:
        return None
    ys = np.asarray(y, dtype=np.float64)[None, :]
    gain, where = global_split(pts, ys, prm)
    if int(where[0]) != c or not gain[0] > prm.split_gain:
        return None
    if not smooth_fit(pts, ys).rms[0] > prm.confirm_rms:
        return None
    return c, float(gain[0])
