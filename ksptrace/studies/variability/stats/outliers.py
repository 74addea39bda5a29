"""Outliers of a sample, and fits they broke: Tukey's far-out values (and whether they explain
a fitted mean that misses the sample mean), and Johnson S_U fits that collapsed to their normal
limit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.studies.variability.stats.fitting import JohnsonSU

OUTLIER_FENCE = 3.0
"""Values beyond the quartiles by more than this many interquartile ranges are outliers
(Tukey's "far out" fence)."""
COLLAPSE_SHAPE = 1e3
"""|a| of a Johnson S_U fit beyond which it is taken for its normal limit ..."""
COLLAPSE_LOCATION = 1e3
"""... when its loc also lies this many data standard deviations away from the data's median."""
COLLAPSE_B = 20.0
"""b of a Johnson S_U fit beyond which it is its normal limit: the fitting engine bounds |a|
and b by 100, and as b grows the family tends to a normal whatever a / b is; at b = 20 its
skewness and excess kurtosis are within a few hundredths of the normal's, and the likelihood
is flat along the rest of the way, so the engine stops anywhere on that ridge."""


@dataclass(frozen=True)
class Outliers:
    """Far-out values of a sample and what the sample mean is without them."""

    count: int
    low: float
    """Smallest outlier."""
    high: float
    """Largest outlier."""
    total: int
    sample_mean: float
    clean_mean: float
    """Mean of the sample without its outliers."""

    def describe(self) -> str:
        """E.g. '12 of 1000 values between 0.008 s and 0.028 s'."""
        return f"{self.count} of {self.total} values between {self.low:.3g} s and {self.high:.3g} s"


QUARTILE_SAMPLE = 1 << 22
"""Outlier fences come from the quartiles of at most this many values."""


def outliers(x: np.ndarray, fence: float = OUTLIER_FENCE) -> Outliers | None:
    """The values of ``x`` outside [Q1 - fence IQR, Q3 + fence IQR], or None when there are none."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    if flat.size == 0:
        return None
    # quartiles of a seeded subsample beyond QUARTILE_SAMPLE values: np.quantile copies its
    # input, and a paper-scale trace must not be copied whole for a flag's reason
    sample = flat if flat.size <= QUARTILE_SAMPLE else flat[
        np.random.default_rng(0).integers(0, flat.size, QUARTILE_SAMPLE)]
    q1, q3 = np.quantile(sample, [0.25, 0.75])
    iqr = float(q3 - q1)
    far = (flat > q3 + fence * iqr) | (flat < q1 - fence * iqr)
    count = int(np.count_nonzero(far))
    if count == 0 or count == flat.size:
        return None
    out = flat[far]
    total = float(flat.sum())
    return Outliers(
        count=count,
        low=float(out.min()),
        high=float(out.max()),
        total=int(flat.size),
        sample_mean=total / flat.size,
        clean_mean=(total - float(out.sum())) / (flat.size - count),
    )


def outliers_explain_mean(x: np.ndarray, fitted_mean: float, tolerance: float) -> Outliers | None:
    """The outliers of ``x`` when they explain why ``fitted_mean`` is far from the sample mean.

    They do when the mean of ``x`` without them is within ``tolerance`` (a fraction) of the
    fitted mean: the fit follows the bulk and the outliers pull the sample mean away.
    """
    found = outliers(x)
    if found is None or not np.isfinite(fitted_mean):
        return None
    if abs(fitted_mean - found.clean_mean) <= tolerance * abs(found.clean_mean):
        return found
    return None


def jsu_collapsed(fit: JohnsonSU, x: np.ndarray) -> bool:
    """Whether a Johnson S_U fit of ``x`` ran off to its normal limit.

    As a -> -inf and b -> inf with a / b fixed, S_U tends to a normal distribution; the
    optimiser then stops at arbitrary, huge parameters (a of -1e8 and loc of -2000 s for data
    of microseconds are seen on real traces). Detected from the parameters: |a| above
    COLLAPSE_SHAPE and loc more than COLLAPSE_LOCATION data standard deviations off the median,
    or b above COLLAPSE_B, or the fitting engine stopped at a bound (status ``boundary``).
    """
    flat = np.asarray(x, dtype=np.float64).ravel()
    spread = float(flat.std())
    if not spread > 0:
        spread = max(abs(float(np.median(flat))), float(np.finfo(np.float64).tiny))
    far = abs(fit.loc - float(np.median(flat))) > COLLAPSE_LOCATION * spread
    return (bool(abs(fit.a) > COLLAPSE_SHAPE and far) or fit.status == "boundary"
            or fit.b > COLLAPSE_B or not np.isfinite(fit.params).all())
