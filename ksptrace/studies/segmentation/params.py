"""Every threshold of the segmentation detector, with the paper's defaults (one dataclass)."""

from __future__ import annotations

from dataclasses import dataclass

from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation.pmnf import Criterion


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
    confirm_min_points: int = 6
    """Below this many points the confirmation is skipped. With six to nine points one smooth
    law (four free numbers) follows many kinks, so the confirmation costs true positives there:
    on the 6-9 point table at 5 % noise, 10 here gives 85.4 % correct (linear) with up to 3.0 %
    false positives per cell, 6 gives 82.6 % with at most 0.75 % (seed 5, 400 + 400 series)."""
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
