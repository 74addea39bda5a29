"""Segmentation of a metric over process counts: detection, change point, per-segment models.

The detector follows Ilyas, Calotoiu and Wolf, "Off-Road Performance Modeling - How to Deal with
Segmented Data" (Euro-Par 2017 workshops):

1. Slide a window of ``window`` (5) consecutive points over the sorted data and fit a PMNF model
   to each window; its error is nRSS = sqrt(RSS) / mean(y).
2. A window is homogeneous when nRSS < ``homogeneous_below`` (0.1), heterogeneous otherwise.
3. The series is segmented when the largest nRSS exceeds ``theta`` (0.5), or when some window's
   nRSS lies in [0.1, 0.5] and is more than ``epsilon`` (4) times its predecessor's:
   e_{i+1} / (e_i + eta) > 4.
4. The change point comes from the run of heterogeneous windows: three ones put the change on a
   point shared by both laws (the third point of the run's second window), four ones put it
   between the third and fourth points of that window. Runs cut short by the ends of the data,
   or of other lengths, are read from where the run starts or ends, or from its middle.
5. Each side gets its own model when it has ``min_segment_points``; a shorter side gets advice on
   which measurements to add. Sides long enough are searched again (recursion, beyond the paper).

Beyond the paper, step 3 also counts a fall of nRSS (``two_sided``), step 4 picks the split with
the smallest residuals when the run is not one of the paper's two cases (``refine``), and when no
window is homogeneous, so that the pattern cannot place a change, one model over all points is
compared with the best two-segment model by leave-one-out error (``global_split``).

``detect_many`` runs steps 1-4 for many series over the same points at once; ``segment`` runs the
whole pipeline on one series, with repetitions, NaN and too few points handled.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ksptrace.analysis.pmnf import (
    Criterion,
    PMNFFits,
    PMNFModel,
    aggregate,
    fit_many,
    loo_residuals,
)
from ksptrace.analysis.smooth_law import relative_rss, smooth_fit
from ksptrace.errors import AnalysisError


@dataclass(frozen=True)
class SegmentationParams:
    """Every threshold of the detector, with the paper's defaults."""

    window: int = 5
    """Points per sliding window (the paper's subset size)."""
    homogeneous_below: float = 0.1
    """A window with nRSS below this is homogeneous (pattern 0)."""
    theta: float = 0.5
    """Segmented when the largest window nRSS exceeds this."""
    epsilon: float = 4.0
    """Segmented when e_{i+1} / (e_i + eta) exceeds this and e_{i+1} lies in the middle band."""
    eta: float = 1e-16
    """Keeps the relative nRSS finite when a window fits exactly."""
    min_points: int = 6
    """Fewer distinct p than this and no detection is attempted."""
    min_segment_points: int = 5
    """A segment needs this many points for its own model (Extra-P's minimum)."""
    recurse_min_points: int = 10
    """A segment with at least this many points is searched for a further change point."""
    max_change_points: int = 3
    """Recursion stops after this many change points."""
    criterion: Criterion = "smape"
    """Leave-one-out cost that picks each model: "smape" (Extra-P's default) or "rss"."""
    two_sided: bool = True
    """Beyond the paper (``paper()`` turns it off): also flag a fall of nRSS by more than
    ``epsilon`` (e_i / (e_{i+1} + eta) with e_i in the band), which catches changes close to
    the first point."""
    refine: bool = True
    """Beyond the paper (``paper()`` turns it off): where the pattern is not one of its two
    clean cases (three or four ones, clear of both ends), pick the split consistent with the
    pattern whose two segment models leave the smallest relative residuals. False reads such
    runs from their middle."""
    global_split: bool = True
    """Beyond the paper (``paper()`` turns it off): when every window is heterogeneous and the
    tests above did not fire, compare one model over all points with the best two-segment model
    (sides of ``split_min_side`` points or more; a side of two is a constant) by the sum of
    squared relative leave-one-out residuals, and split where that cuts it by ``split_gain``."""
    confirm: bool = True
    """Beyond the paper (``paper()`` turns it off): a series flagged by the ratio tests
    (rise or fall) or by the global split, but not by theta, stays flagged only when the best
    single law c0 + c1 p^i log2(p)^j with real exponents over all points
    (``smooth_law.smooth_fit``) misses by more than ``confirm_rms_high`` (RMS relative
    residual), or by more than ``confirm_rms`` with residuals that run in stretches of one sign
    (Durbin-Watson statistic below ``confirm_dw``; random residuals give about 2)."""
    confirm_rms: float = 0.035
    """Uniform noise of +-5 % has an RMS of 2.9 %."""
    confirm_rms_high: float = 0.12
    """Uniform noise of +-15 % has an RMS of 8.7 %."""
    confirm_dw: float = 1.8
    confirm_noise_factor: float = 3.0
    """Where the noise level is known (from repetitions), a misfit above ``confirm_rms`` and this
    many times the noise also confirms."""
    bend_test: bool = True
    """Beyond the paper (``paper()`` turns it off): a series no other test flagged is segmented
    when the best single smooth law over all points (``smooth_law.smooth_fit``) misses by more
    than ``bend_rms`` (RMS relative residual) and its residuals run in long stretches of one
    sign (Durbin-Watson statistic below ``bend_dw``; random noise gives about 2): a bend that
    no single law follows, as in a continuous join whose windows each fit well."""
    bend_rms: float = 0.02
    """Smallest RMS relative misfit of the single smooth law for the bend test."""
    bend_dw: float = 0.8
    """Largest Durbin-Watson statistic of that law's residuals for the bend test."""
    split_gain: float = 1.5
    """The global split must divide the single model's leave-one-out error by more than this.
    Two real 2-core oversubscription campaigns gave gains of 2.47 and 1.51; on the synthetic
    evaluation 1.5 costs 0.1-0.3 points of accuracy against 2.0 and keeps every target."""
    split_min_side: int = 2
    """Fewest points on either side of a global split (one point is an outlier, not a law)."""

    @classmethod
    def paper(cls) -> SegmentationParams:
        """The detector exactly as published: one-sided relative nRSS, runs read from the middle,
        no global split."""
        return cls(two_sided=False, refine=False, global_split=False, bend_test=False,
                   confirm=False)

    def __post_init__(self) -> None:
        if self.window < 3:
            raise AnalysisError(f"window must be at least 3 points, got {self.window}")
        if self.min_points < self.window + 1:
            raise AnalysisError(
                f"min_points ({self.min_points}) must exceed window ({self.window}) for two windows"
            )
        if not 0 < self.homogeneous_below <= self.theta:
            raise AnalysisError("need 0 < homogeneous_below <= theta; check the thresholds")
        if self.min_segment_points < 3:
            raise AnalysisError("min_segment_points must be at least 3 (two coefficients + LOO)")
        if self.split_gain <= 1:
            raise AnalysisError(f"split_gain must exceed 1, got {self.split_gain}")
        if self.bend_rms <= 0 or self.bend_dw <= 0:
            raise AnalysisError("bend_rms and bend_dw must be positive; use bend_test=False")
        if min(self.confirm_rms, self.confirm_rms_high, self.confirm_dw) <= 0:
            raise AnalysisError("confirm_rms, confirm_rms_high and confirm_dw must be positive")
        if self.split_min_side < 2:
            raise AnalysisError(f"split_min_side must be at least 2, got {self.split_min_side}")


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
    smooth = _SmoothCheck(pts, ys, ~strong & (prm.confirm or prm.bend_test), noise)
    if prm.confirm:
        # A rise or fall of window errors alone is also what noise, or one law between Extra-P's
        # terms, does: believe it only when no single smooth law explains all points.
        segmented &= strong | smooth.confirms(prm)
    pattern = nrss >= prm.homogeneous_below
    lo, hi, clean, first, last = _locate(nrss, pattern, w)
    if prm.refine:
        todo = segmented & ~clean
        if todo.any():
            rlo = _best_split(pts, ys[todo], first[todo], last[todo], prm)
            lo[todo] = rlo
            hi[todo] = rlo + 1
    by_split = np.zeros_like(segmented)
    if prm.global_split:
        todo = np.flatnonzero(pattern.all(axis=1) & ~segmented)
        if todo.size:
            gain, c = _global_split(pts, ys[todo], prm)
            hit = gain > prm.split_gain
            if prm.confirm:
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
            c = _best_split(pts, ys[rows], np.full(rows.size, 2), np.full(rows.size, n - 4), prm)
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


def _locate(nrss: np.ndarray, pattern: np.ndarray, w: int) -> tuple[np.ndarray, ...]:
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


def _best_split(
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


def _global_split(
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


@dataclass(frozen=True)
class SegmentFits:
    """Per-segment models of S series: left = points 0..lo, right = points hi..n-1."""

    left: list[PMNFModel | None]
    right: list[PMNFModel | None]


def model_segments_many(
    y: np.ndarray, det: Detection, params: SegmentationParams | None = None
) -> SegmentFits:
    """Fit both sides of every segmented series; series with equal (lo, hi) are fitted together."""
    prm = params or SegmentationParams()
    ys = np.atleast_2d(np.asarray(y, dtype=np.float64))
    S, n = ys.shape
    left: list[PMNFModel | None] = [None] * S
    right: list[PMNFModel | None] = [None] * S
    idx = np.flatnonzero(det.segmented)
    if idx.size == 0:
        return SegmentFits(left, right)
    keys = det.lo[idx] * n + det.hi[idx]
    for key in np.unique(keys):
        group = idx[keys == key]
        lo, hi = divmod(int(key), n)
        if lo + 1 >= prm.min_segment_points:
            fits = fit_many(det.p[: lo + 1], ys[group, : lo + 1], prm.criterion)
            for k, s in enumerate(group):
                left[s] = fits.model(k)
        if n - hi >= prm.min_segment_points:
            fits = fit_many(det.p[hi:], ys[group, hi:], prm.criterion)
            for k, s in enumerate(group):
                right[s] = fits.model(k)
    return SegmentFits(left, right)


# --------------------------------------------------------------------------- one series, in full


@dataclass(frozen=True)
class ChangePoint:
    """Where the behaviour changes: on a shared point (lo == hi) or between two points."""

    p_lo: float
    p_hi: float

    @property
    def shared(self) -> bool:
        return self.p_lo == self.p_hi

    def __str__(self) -> str:
        if self.shared:
            return f"p = {self.p_lo:g}"
        return f"between p = {self.p_lo:g} and p = {self.p_hi:g}"


@dataclass(frozen=True)
class Segment:
    """One behaviour: its points, its model (None if too short) and what to measure next."""

    p: np.ndarray
    y: np.ndarray
    model: PMNFModel | None
    advice: str = ""

    @property
    def p_range(self) -> tuple[float, float]:
        return float(self.p[0]), float(self.p[-1])


@dataclass(frozen=True)
class Segmentation:
    """Everything ``segment`` found for one series."""

    p: np.ndarray
    """float64 [n], distinct p (repetitions reduced, NaN and non-positive dropped)."""
    y: np.ndarray
    """float64 [n], the value at each p."""
    single: PMNFModel | None
    """One model over all points (None below 3 points)."""
    segmented: bool
    change_points: tuple[ChangePoint, ...]
    segments: tuple[Segment, ...]
    """One segment when not segmented; k+1 segments for k change points."""
    pattern: str = ""
    """The top-level window pattern, e.g. "001110" ("" when not run)."""
    window_nrss: np.ndarray = field(default_factory=lambda: np.empty(0))
    by_split: bool = False
    """Segmented by the global two-segment test because no window was homogeneous."""
    by_bend: bool = False
    """Segmented by the bend test: every window fits, but no single smooth law over all points
    does, and its misfit is systematic."""
    notes: tuple[str, ...] = ()
    """What was done to the input and why detection did not run, in words."""

    @property
    def ok(self) -> bool:
        """True when detection ran (enough distinct p)."""
        return self.pattern != ""

    def describe(self) -> str:
        lines = list(self.notes)
        if self.single is not None:
            lines.append(f"single model: {self.single}")
        if self.ok:
            verdict = "segmented" if self.segmented else "not segmented"
            if self.by_split:
                verdict += " (no homogeneous window; found by the global two-segment test)"
            if self.by_bend:
                verdict += " (no single smooth law follows all points; found by the bend test)"
            lines.append(f"window pattern {self.pattern}: {verdict}")
        for cp in self.change_points:
            lines.append(f"change point {cp}")
        if self.segmented:
            for seg in self.segments:
                lo, hi = seg.p_range
                model = str(seg.model) if seg.model is not None else seg.advice
                lines.append(f"  p in [{lo:g}, {hi:g}]: {model}")
        return "\n".join(lines)


def segment(
    p: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    params: SegmentationParams | None = None,
) -> Segmentation:
    """Detect, locate and model the segments of one series m(p).

    Repeated p are reduced to their median; NaN values and non-positive p are dropped with a note.
    With fewer than ``min_points`` distinct p the result says how many more to measure instead of
    raising. A constant series is simply not segmented.
    """
    prm = params or SegmentationParams()
    raw_p = np.asarray(p, dtype=np.float64).ravel()
    raw_y = np.asarray(y, dtype=np.float64).ravel()
    if raw_p.shape != raw_y.shape:
        raise AnalysisError(f"{raw_p.size} values of p but {raw_y.size} measurements; pair them up")
    notes: list[str] = []
    bad_y = ~np.isfinite(raw_y)
    if bad_y.any():
        notes.append(
            f"dropped {int(bad_y.sum())} NaN/infinite value(s) at p = {_fmt_list(raw_p[bad_y])}"
        )
    bad_p = ~np.isfinite(raw_p) | (raw_p <= 0)
    if bad_p.any():
        notes.append(
            f"dropped {int(bad_p.sum())} measurement(s) with non-positive p = "
            f"{_fmt_list(raw_p[bad_p])}; process counts start at 1"
        )
    keep = ~bad_y & ~bad_p
    pts, vals = aggregate(raw_p[keep], raw_y[keep])
    if pts.size < keep.sum():
        notes.append(
            f"reduced {int(keep.sum())} measurements to the median at {pts.size} distinct p"
        )
    single = fit_many(pts, vals, prm.criterion).model(0) if pts.size >= 3 else None
    if pts.size < prm.min_points:
        notes.append(
            f"need at least {prm.min_points} distinct p for segmentation, got {pts.size}"
            f" (p = {_fmt_list(pts)}); measure {prm.min_points - pts.size} more"
        )
        return Segmentation(
            p=pts,
            y=vals,
            single=single,
            segmented=False,
            change_points=(),
            segments=(Segment(pts, vals, single),),
            notes=tuple(notes),
        )
    noise = repetition_noise(raw_p[keep], raw_y[keep])
    det = detect_many(pts, vals[None, :], prm, noise=np.array([noise]))
    cps, segs = _split(pts, vals, prm, det, depth=0)
    return Segmentation(
        p=pts,
        y=vals,
        single=single,
        segmented=bool(det.segmented[0]),
        change_points=tuple(cps),
        segments=tuple(segs),
        pattern=det.pattern_string(0),
        window_nrss=det.nrss[0],
        by_split=bool(det.by_split[0]),
        by_bend=bool(det.by_bend[0]),
        notes=tuple(notes),
    )


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


def _split(
    pts: np.ndarray, vals: np.ndarray, prm: SegmentationParams, det: Detection | None, depth: int
) -> tuple[list[ChangePoint], list[Segment]]:
    """Change points and segments of one series, searching long segments again."""
    if det is None:
        if pts.size < max(prm.recurse_min_points, prm.min_points) or depth >= prm.max_change_points:
            return [], [_model_segment(pts, vals, prm, side="")]
        det = detect_many(pts, vals[None, :], prm)
    if not det.segmented[0]:
        return [], [_model_segment(pts, vals, prm, side="")]
    lo, hi = int(det.lo[0]), int(det.hi[0])
    left_cps, left_segs = _split(pts[: lo + 1], vals[: lo + 1], prm, None, depth + 1)
    right_cps, right_segs = _split(pts[hi:], vals[hi:], prm, None, depth + 1)
    left_segs[-1] = _with_advice(left_segs[-1], pts, prm, side="left")
    right_segs[0] = _with_advice(right_segs[0], pts, prm, side="right")
    cp = ChangePoint(float(pts[lo]), float(pts[hi]))
    return [*left_cps, cp, *right_cps], [*left_segs, *right_segs]


def _model_segment(
    pts: np.ndarray, vals: np.ndarray, prm: SegmentationParams, side: str
) -> Segment:
    model = (
        fit_many(pts, vals, prm.criterion).model(0) if pts.size >= prm.min_segment_points else None
    )
    return Segment(pts, vals, model)


def _with_advice(seg: Segment, all_p: np.ndarray, prm: SegmentationParams, side: str) -> Segment:
    if seg.model is not None:
        return seg
    missing = prm.min_segment_points - seg.p.size
    extra = suggest_points(all_p, seg.p, missing, side)
    lo, hi = seg.p_range
    head = (
        f"not enough points for a model: {seg.p.size} of {prm.min_segment_points} in "
        f"p = {lo:g}..{hi:g}"
    )
    if extra.size:
        advice = f"{head}; add measurements at p = {_fmt_list(extra)}"
    else:
        advice = f"{head}, and no other integer p lies there; it cannot be modelled separately"
    return Segment(seg.p, seg.y, None, advice)


def suggest_points(all_p: np.ndarray, seg_p: np.ndarray, count: int, side: str) -> np.ndarray:
    """``count`` new integer p inside or beyond a short segment, following the data's spacing.

    The right-most segment is extended upwards (doubling for powers of two, else the last step);
    any other segment is filled between its points, then extended away from its neighbour.
    """
    have = set(np.round(all_p).astype(int).tolist())
    new: list[int] = []
    geometric = all_p.size >= 3 and bool(np.allclose(all_p[1:] / all_p[:-1], all_p[1] / all_p[0]))
    ratio = float(all_p[1] / all_p[0]) if geometric else 1.0
    step = float(np.median(np.diff(all_p))) if all_p.size > 1 else 1.0

    def take(v: float) -> None:
        k = round(v)
        if k >= 1 and k not in have and len(new) < count:
            have.add(k)
            new.append(k)

    lo, hi = float(seg_p[0]), float(seg_p[-1])
    if side != "right":
        for a, b in itertools.pairwise(seg_p):
            take(np.sqrt(a * b) if geometric else (a + b) / 2)
    cur = hi if side == "right" else lo
    for _ in range(64):
        if len(new) >= count:
            break
        if side == "right":
            cur = cur * ratio if geometric else cur + step
        else:
            cur = cur / ratio if geometric else cur - step
            if cur < 1:
                # Nothing below p = 1: fill between points at ever finer spacing instead.
                grid = np.linspace(lo, hi, 2 * (count + seg_p.size) + 1)
                for v in grid:
                    take(float(v))
                break
        take(cur)
    return np.array(sorted(new), dtype=np.float64)


def _fmt_list(a: np.ndarray) -> str:
    return ", ".join(f"{v:g}" for v in np.asarray(a).ravel())


__all__ = [
    "ChangePoint",
    "Detection",
    "PMNFFits",
    "Segment",
    "SegmentFits",
    "Segmentation",
    "SegmentationParams",
    "detect_many",
    "model_segments_many",
    "repetition_noise",
    "segment",
    "suggest_points",
]
