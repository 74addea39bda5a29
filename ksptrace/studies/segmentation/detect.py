"""Steps 1-4 of the detector for many series over the same points: window models, the
thresholds, the checks beyond the paper, and one change point per series."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation.locate import best_split, global_split, locate_run
from ksptrace.studies.segmentation.params import SegmentationParams
from ksptrace.studies.segmentation.pmnf import fit_many
from ksptrace.studies.segmentation.smooth_law import smooth_fit


@dataclass(frozen=True)
class Detection:
    """Steps 1-4 for S series sharing the points ``p``. Change indices are into ``p``."""

    p: np.ndarray
    """float64 [n]"""
    nrss: np.ndarray
    """float64 [S, r], r = n - window + 1: each window's nRSS."""
    eps: np.ndarray
    """float64 [S, r - 1]: relative nRSS e_{i+1} / (e_i + eta)."""
    pattern: np.ndarray
    """bool [S, r]: heterogeneous windows."""
    segmented: np.ndarray
    """bool [S]"""
    lo: np.ndarray
    """int64 [S]: last point of the left segment (-1 when not segmented)."""
    hi: np.ndarray
    """int64 [S]: first point of the right segment; equal to ``lo`` for a shared point."""
    by_split: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """bool [S]: segmented by the global two-segment test, not by the window thresholds."""
    by_bend: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """bool [S]: segmented by the bend test (no single smooth law follows the series)."""

    def pattern_string(self, s: int = 0) -> str:
        return "".join("1" if v else "0" for v in self.pattern[s])


def detect_many(
    p: Sequence[float] | np.ndarray,
    y: np.ndarray,
    params: SegmentationParams | None = None,
    noise: np.ndarray | None = None,
) -> Detection:
    """Detect segmentation and locate one change point in every row of ``y`` [S, n].

    ``noise`` [S] (optional): each series' relative noise level, e.g. from repetitions
    (``repetition_noise``); NaN where unknown. It lets the confirmation accept a smooth law's
    misfit that is far above the measured noise."""
    prm = params or SegmentationParams()
    pts = np.asarray(p, dtype=np.float64)
    ys = np.atleast_2d(np.asarray(y, dtype=np.float64))
    n, w = pts.shape[0], prm.window
    if n < prm.min_points:
        raise AnalysisError(f"need at least {prm.min_points} distinct p for segmentation, got {n}")
    if np.any(np.diff(pts) <= 0):
        raise AnalysisError("p must be strictly increasing; sort it and aggregate repetitions")
    r = n - w + 1
    nrss = np.empty((ys.shape[0], r))
    for s in range(r):
        nrss[:, s] = fit_many(pts[s : s + w], ys[:, s : s + w], prm.criterion).nrss
    eps = nrss[:, 1:] / (nrss[:, :-1] + prm.eta)
    band = (nrss[:, 1:] >= prm.homogeneous_below) & (nrss[:, 1:] <= prm.theta)
    strong = nrss.max(axis=1) > prm.theta
    segmented = strong | np.any(band & (eps > prm.epsilon), axis=1)
    if prm.two_sided:
        fall = nrss[:, :-1] / (nrss[:, 1:] + prm.eta)
        band_before = (nrss[:, :-1] >= prm.homogeneous_below) & (nrss[:, :-1] <= prm.theta)
        segmented |= np.any(band_before & (fall > prm.epsilon), axis=1)
    # One smooth law over all points, for every series that theta did not settle.
    confirm = prm.confirm and n >= prm.confirm_min_points
    smooth = _SmoothCheck(pts, ys, ~strong & (confirm or prm.bend_test), noise)
    if confirm:
        # A rise or fall of window errors alone is also what noise, or one law between Extra-P's
        # terms, does: believe it only when no single smooth law explains all points.
        segmented &= strong | smooth.confirms(prm)
    pattern = nrss >= prm.homogeneous_below
    lo, hi, clean, first, last = locate_run(nrss, pattern, w)
    if prm.refine:
        todo = segmented & ~clean
        if todo.any():
            rlo = best_split(pts, ys[todo], first[todo], last[todo], prm)
            lo[todo] = rlo
            hi[todo] = rlo + 1
    by_split = np.zeros_like(segmented)
    if prm.global_split:
        todo = np.flatnonzero(pattern.all(axis=1) & ~segmented)
        if todo.size:
            gain, c = global_split(pts, ys[todo], prm)
            hit = gain > prm.split_gain
            if confirm:
                hit &= smooth.confirms(prm)[todo]
            rows = todo[hit]
            by_split[rows] = True
            segmented[rows] = True
            lo[rows] = c[hit]
            hi[rows] = c[hit] + 1
    by_bend = np.zeros_like(segmented)
    if prm.bend_test:
        by_bend = ~segmented & (smooth.rms > prm.bend_rms) & (smooth.dw < prm.bend_dw)
        rows = np.flatnonzero(by_bend)
        if rows.size:
            segmented[rows] = True
            c = best_split(pts, ys[rows], np.full(rows.size, 2), np.full(rows.size, n - 4), prm)
            lo[rows] = c
            hi[rows] = c + 1
    lo = np.where(segmented, lo, -1)
    hi = np.where(segmented, hi, -1)
    return Detection(
        p=pts, nrss=nrss, eps=eps, pattern=pattern, segmented=segmented, lo=lo, hi=hi,
        by_split=by_split, by_bend=by_bend,
    )  # fmt: skip


class _SmoothCheck:
    """The best single smooth law of the rows in ``rows`` (NaN statistics elsewhere)."""

    def __init__(
        self, pts: np.ndarray, ys: np.ndarray, rows: np.ndarray, noise: np.ndarray | None
    ) -> None:
        self.noise = np.full(ys.shape[0], np.nan) if noise is None else np.asarray(noise, float)
        self.rms = np.full(ys.shape[0], np.nan)
        self.dw = np.full(ys.shape[0], np.nan)
        if rows.any():
            fit = smooth_fit(pts, ys[rows])
            self.rms[rows] = fit.rms
            self.dw[rows] = fit.durbin_watson

    def confirms(self, prm: SegmentationParams) -> np.ndarray:
        """bool [S]: the single law misses by far, far beyond the measured noise, or clearly and
        systematically."""
        with np.errstate(invalid="ignore"):
            far = self.rms > prm.confirm_rms_high
            far |= (self.rms > prm.confirm_rms) & (self.rms > prm.confirm_noise_factor * self.noise)
            systematic = (self.rms > prm.confirm_rms) & (self.dw < prm.confirm_dw)
        return far | systematic


def repetition_noise(p: np.ndarray, y: np.ndarray) -> float:
    """The relative noise of one measurement, from repetitions; NaN without any.

    Interference on a shared machine only ever adds time, so the spread of repetitions is
    read from below: at each repeated p, the gap between the two smallest values relative to
    the smallest, divided by that gap's expected multiple of the standard deviation for that
    many normal draws (``GAP_SIGMAS``); the median over p.
    """
    pts = np.asarray(p, dtype=np.float64)
    vals = np.asarray(y, dtype=np.float64)
    est = []
    for v in np.unique(pts):
        reps = np.sort(vals[pts == v])
        if reps.size >= 2 and reps[0] != 0:
            sigmas = GAP_SIGMAS[min(reps.size, len(GAP_SIGMAS) - 1)]
            est.append(float(reps[1] - reps[0]) / abs(float(reps[0])) / sigmas)
    return float(np.median(est)) if est else float("nan")


GAP_SIGMAS = (np.nan, np.nan, 1.128, 0.846, 0.732, 0.668, 0.625, 0.595, 0.571, 0.553, 0.537)
"""Expected gap between the two smallest of k standard normal draws, for k = 2..10 (the last
entry serves for more)."""
