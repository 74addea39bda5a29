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
compared with the best two-segment model by leave-one-out error (``global_split``). A series
flagged only by a ratio or by the global split must also be missed by one smooth law with real
exponents, clearly or systematically (``confirm``), and a series no test flagged is segmented
when that law misses it systematically (``bend_test``); see ``smooth_law``.

The pieces live by concern: ``segment_params`` (thresholds), ``segment_detect`` (steps 1-4 for
many series at once), ``segment_locate`` (change points), ``segment_advice`` (what to measure);
this module runs the whole pipeline on one series, with repetitions, NaN and too few points
handled, and re-exports the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation.advice import fmt_list, suggest_points
from ksptrace.studies.segmentation.detect import Detection, detect_many, repetition_noise
from ksptrace.studies.segmentation.locate import core_count_split
from ksptrace.studies.segmentation.params import SegmentationParams
from ksptrace.studies.segmentation.pmnf import PMNFFits, PMNFModel, aggregate, fit_many


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
            if self.by_split:  # the windows may have been homogeneous (0s) yet placed no change
                why = ("no homogeneous window" if "0" not in self.pattern else
                       "the homogeneous windows (0s) placed no change")
                verdict += f" ({why}; found by the global two-segment test)"
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
    reduce: Literal["median", "min"] = "median",
    cores: int | None = None,
) -> Segmentation:
    """Detect, locate and model the segments of one series m(p).

    Repeated p are reduced to their median, or to their minimum (``reduce="min"``: for times on
    a shared machine, where interference only adds time); their spread from below gives the
    noise level the detector's confirmation uses (``repetition_noise``). NaN values and
    non-positive p are dropped with a note. ``cores``: the machine's core count, so that advice
    to measure at more processes than cores says so.
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
            f"dropped {int(bad_y.sum())} NaN/infinite value(s) at p = {fmt_list(raw_p[bad_y])}"
        )
    bad_p = ~np.isfinite(raw_p) | (raw_p <= 0)
    if bad_p.any():
        notes.append(
            f"dropped {int(bad_p.sum())} measurement(s) with non-positive p = "
            f"{fmt_list(raw_p[bad_p])}; process counts start at 1"
        )
    keep = ~bad_y & ~bad_p
    pts, vals = aggregate(raw_p[keep], raw_y[keep], reduce)
    if pts.size < keep.sum():
        notes.append(
            f"reduced {int(keep.sum())} measurements to the {reduce} at {pts.size} distinct p"
        )
    single = fit_many(pts, vals, prm.criterion).model(0) if pts.size >= 3 else None
    if pts.size < prm.min_points:
        notes.append(
            f"need at least {prm.min_points} distinct p for segmentation, got {pts.size}"
            f" (p = {fmt_list(pts)}); measure {prm.min_points - pts.size} more"
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
    if not det.segmented[0] and cores and prm.global_split:  # not in the paper's mode
        found = core_count_split(pts, vals, cores, prm)
        if found is not None:
            c, gain = found
            det = replace(det, segmented=np.array([True]), lo=np.array([c]),
                          hi=np.array([c + 1]), by_split=np.array([True]))
            notes.append(
                f"change where the ranks outnumber the {cores} cores (p = {pts[c]:g} | "
                f"{pts[c + 1]:g}): two segments cut the leave-one-out error {gain:.1f}-fold"
            )
    cps, segs = _split(pts, vals, prm, det, depth=0, cores=cores)
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


def _split(
    pts: np.ndarray,
    vals: np.ndarray,
    prm: SegmentationParams,
    det: Detection | None,
    depth: int,
    cores: int | None = None,
) -> tuple[list[ChangePoint], list[Segment]]:
    """Change points and segments of one series, searching long segments again."""
    if det is None:
        if pts.size < max(prm.recurse_min_points, prm.min_points) or depth >= prm.max_change_points:
            return [], [_model_segment(pts, vals, prm, side="")]
        det = detect_many(pts, vals[None, :], prm)
    if not det.segmented[0]:
        return [], [_model_segment(pts, vals, prm, side="")]
    lo, hi = int(det.lo[0]), int(det.hi[0])
    left_cps, left_segs = _split(pts[: lo + 1], vals[: lo + 1], prm, None, depth + 1, cores)
    right_cps, right_segs = _split(pts[hi:], vals[hi:], prm, None, depth + 1, cores)
    left_segs[-1] = _with_advice(left_segs[-1], pts, prm, "left", cores)
    right_segs[0] = _with_advice(right_segs[0], pts, prm, "right", cores)
    cp = ChangePoint(float(pts[lo]), float(pts[hi]))
    return [*left_cps, cp, *right_cps], [*left_segs, *right_segs]


def _model_segment(
    pts: np.ndarray, vals: np.ndarray, prm: SegmentationParams, side: str
) -> Segment:
    model = (
        fit_many(pts, vals, prm.criterion).model(0) if pts.size >= prm.min_segment_points else None
    )
    return Segment(pts, vals, model)


def _with_advice(
    seg: Segment, all_p: np.ndarray, prm: SegmentationParams, side: str, cores: int | None
) -> Segment:
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
        advice = f"{head}; add measurements at p = {fmt_list(extra)}"
        over = extra[extra > cores] if cores else extra[:0]
        if over.size:
            advice += (
                f" (p = {fmt_list(over)} exceeds the {cores} cores the runs had: those runs "
                "would be oversubscribed, which is itself a change of behaviour)"
            )
    else:
        advice = f"{head}, and no other integer p lies there; it cannot be modelled separately"
    return Segment(seg.p, seg.y, None, advice)


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
