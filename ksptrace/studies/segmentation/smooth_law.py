"""How well one smooth law c0 + c1 * p^i * log2(p)^j, with real exponents, explains a series.

Extra-P's search space (``pmnf.TERMS``) has 43 laws; a law between them, such as
83 + 69 p^0.15 log2(p)^0.42, leaves a model error in every window, and that error can change
by a factor of ten from one window to the next without any change of behaviour. The
segmentation detector asks this module whether a single law over *all* the points explains
the series to within the noise before it believes such a jump in window errors, and whether
the misfit of that law is systematic (a bend no single law follows) or random.

The exponents are searched on a coarse grid (i in [0, 3] by 1/8, j in [0, 2] by 1/4), then
refined per series by a pattern search down to steps of 1/256. Each (i, j) is fitted by least
squares on relative residuals (weights 1 / y^2), so a small value counts as much as a large one,
as in nRSS; the 2x2 normal equations are solved for all series at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.studies.segmentation.pmnf import TERMS

I_GRID = np.arange(0.0, 3.0 + 1e-9, 1.0 / 8)
J_GRID = np.arange(0.0, 2.0 + 1e-9, 1.0 / 4)
REFINE_STEPS = (1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256)


@dataclass(frozen=True)
class SmoothFit:
    """The best single law per series."""

    rms: np.ndarray
    """float64 [S]: root mean square relative residual."""
    resid: np.ndarray
    """float64 [S, n]: relative residuals (prediction - y) / |y|."""

    @property
    def durbin_watson(self) -> np.ndarray:
        """float64 [S]: sum of squared successive residual differences over the sum of squared
        residuals. About 2 or more for random residuals; well below 1 when the residuals run in
        long stretches of one sign, as when the law cannot follow a bend."""
        den = np.sum(self.resid**2, axis=1)
        num = np.sum(np.diff(self.resid, axis=1) ** 2, axis=1)
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 2.0)


def _fit(ys: np.ndarray, w: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rms [S], rel [S, n]) of c0 + c1 t fitted by weighted least squares; t is [n] or [S, n]."""
    t2 = np.broadcast_to(t, ys.shape)
    wt = w * t2
    a00 = w.sum(axis=1)
    a01 = wt.sum(axis=1)
    a11 = (wt * t2).sum(axis=1)
    b0 = (w * ys).sum(axis=1)
    b1 = (wt * ys).sum(axis=1)
    det = a00 * a11 - a01 * a01
    ok = det > 1e-12 * a00 * a11
    safe = np.where(ok, det, 1.0)
    c0 = np.where(ok, (a11 * b0 - a01 * b1) / safe, b0 / a00)
    c1 = np.where(ok, (a00 * b1 - a01 * b0) / safe, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (c0[:, None] + c1[:, None] * t2 - ys) / np.abs(ys)
    rel = np.where(np.isfinite(rel), rel, 0.0)
    return np.sqrt(np.mean(rel**2, axis=1)), rel


def _term(pts: np.ndarray, lp: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """[S, n]: p^i log2(p)^j per row."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.power(pts[None, :], i[:, None]) * np.where(
            j[:, None] == 0, 1.0, np.power(lp[None, :], j[:, None])
        )
    return np.nan_to_num(t)


def smooth_fit(p: np.ndarray, y: np.ndarray) -> SmoothFit:
    """The best single law over each row of ``y`` [S, n] (``p`` [n] positive, increasing).

    Log terms are used only when every p >= 1 (log2 of p < 1 is negative).
    """
    pts = np.asarray(p, dtype=np.float64)
    ys = np.atleast_2d(np.asarray(y, dtype=np.float64))
    S = ys.shape[0]
    if S == 0:
        return SmoothFit(np.zeros(0), np.zeros_like(ys))
    with np.errstate(divide="ignore"):
        w = 1.0 / ys**2
    w = np.where(np.isfinite(w), w, 0.0)
    lp = np.log2(pts)
    logs = bool(np.all(pts >= 1))
    j_grid = J_GRID if logs else J_GRID[:1]
    # The coarse grid, all hypotheses at once.
    grid = [(i, j) for i in I_GRID for j in j_grid]
    rss = _grid_rss(ys, np.array([pts**i * (lp**j if j else 1.0) for i, j in grid]))
    k = np.argmin(rss, axis=0)
    bi = np.array([g[0] for g in grid])[k]
    bj = np.array([g[1] for g in grid])[k]
    best, _ = _fit(ys, w, _term(pts, lp, bi, bj))  # recomputed: the identity cancels digits
    for h in REFINE_STEPS:
        for di, dj in ((h, 0.0), (-h, 0.0), (0.0, h), (0.0, -h)):
            if dj and not logs:
                continue
            ci = np.clip(bi + di, 0.0, 3.0)
            cj = np.clip(bj + dj, 0.0, 2.0)
            rms, _ = _fit(ys, w, _term(pts, lp, ci, cj))
            better = rms < best
            best = np.where(better, rms, best)
            bi = np.where(better, ci, bi)
            bj = np.where(better, cj, bj)
    rms, rel = _fit(ys, w, _term(pts, lp, bi, bj))
    return SmoothFit(rms, rel)


def smooth_rms(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float64 [S]: the smallest root mean square relative residual of one law over each row."""
    return smooth_fit(p, y).rms


def relative_rss(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float64 [S]: the smallest sum of squared relative residuals of a law from Extra-P's
    space (``pmnf.TERMS`` or a constant) over each row, fitted on relative residuals. Unlike
    ``pmnf.fit_many``, whose least squares are absolute, a point at small p counts as much as
    one at large p, which matters on p = 2^k where the values span orders of magnitude."""
    pts = np.asarray(p, dtype=np.float64)
    ys = np.atleast_2d(np.asarray(y, dtype=np.float64))
    logs = bool(np.all(pts >= 1))
    lp = np.log2(pts)
    terms = np.array([np.zeros_like(pts)] + [pts ** float(i) * (lp**j if j else 1.0)
                                             for i, j in TERMS if logs or not j])  # fmt: skip
    return _grid_rss(ys, terms).min(axis=0)


def _grid_rss(ys: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """[H, S]: weighted (1 / y^2) residual sum of squares of c0 + c1 t for each term row t of
    ``terms`` [H, n], from the normal equations (RSS = sum w y^2 - b . c; clipped at 0)."""
    with np.errstate(divide="ignore"):
        w = 1.0 / ys**2
    w = np.where(np.isfinite(w), w, 0.0)
    a00 = w.sum(axis=1)
    b0 = (w * ys).sum(axis=1)
    yy = (w * ys * ys).sum(axis=1)
    a01 = terms @ w.T
    a11 = (terms * terms) @ w.T
    b1 = terms @ (w * ys).T
    det = a00 * a11 - a01 * a01
    ok = det > 1e-9 * a00 * a11
    safe = np.where(ok, det, 1.0)
    c0 = np.where(ok, (a11 * b0 - a01 * b1) / safe, b0 / a00)
    c1 = np.where(ok, (a00 * b1 - a01 * b0) / safe, 0.0)
    return np.maximum(yy - c0 * b0 - c1 * b1, 0.0)
