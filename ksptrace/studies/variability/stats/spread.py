"""The run-to-run spread of KSPSolve, pooled over the repetitions of comparable runs (issue 63).

A single run carries no spread of its own: whether two single runs 8 % apart differ beyond
chance depends on how much repetitions of the same configuration differ on this machine under
these conditions. Every configuration repeated r ≥ 2 times contributes its sample variance of
ln(time) with r − 1 degrees of freedom; the pooled standard deviation

    σ = √( Σ (rᵢ − 1) sᵢ² / Σ (rᵢ − 1) )

is the relative run-to-run spread (σ = 0.08: repetitions differ by about 8 %). Its 95 %
interval follows from (Σ(rᵢ − 1))·σ²/σ_true² ~ χ² with Σ(rᵢ − 1) degrees of freedom (normal
log-times). Two medians of n₁ and n₂ runs are told apart when their log-ratio exceeds
:data:`Z` · σ_high · √(1/n₁ + 1/n₂), with σ_high the interval's upper end: the fewer
repetitions measured the spread, the wider the margin. Pure: arrays in, a dataclass out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ksptrace.errors import AnalysisError

Z = 2.0
"""Standard errors of a log-ratio that count as separated (about 95 %, two-sided)."""
LEVEL = 0.95
"""The confidence level of the spread's interval."""


@dataclass(frozen=True)
class PooledSpread:
    """The pooled run-to-run standard deviation of ln(KSPSolve) and its 95 % interval."""

    sigma: float
    low: float
    high: float
    dof: int
    """Σ (rᵢ − 1): the repetitions beyond the first of each configuration."""
    groups: int
    """The repeated configurations pooled."""

    def margin(self, n1: int, n2: int) -> float:
        """The log-ratio two medians of ``n1`` and ``n2`` runs must exceed to be told apart."""
        return Z * self.high * math.sqrt(1.0 / n1 + 1.0 / n2)

    def text(self) -> str:
        """"8.1 % (95 % interval 6.0–12.3 %, 14 repetitions of 9 configurations)"."""
        return (f"{100 * self.sigma:.1f} % ({100 * LEVEL:.0f} % interval "
                f"{100 * self.low:.1f}–{100 * self.high:.1f} %, {self.dof + self.groups} runs "
                f"of {self.groups} repeated configuration{'s' if self.groups != 1 else ''})")


def pooled_spread(repetitions: Sequence[np.ndarray]) -> PooledSpread | None:
    """The pooled spread of the positive times in ``repetitions`` (one array per
    configuration); None when no configuration was run twice."""
    dof, total, groups = 0, 0.0, 0
    for times in repetitions:
        t = np.asarray(times, dtype=np.float64)
        if t.size < 2:
            continue
        if not np.all(np.isfinite(t) & (t > 0)):
            raise AnalysisError("a run-to-run spread needs positive, finite times; "
                                f"got {t.tolist()}")
        logs = np.log(t)
        total += float(np.sum((logs - logs.mean()) ** 2))
        dof += t.size - 1
        groups += 1
    if dof == 0:
        return None
    sigma = math.sqrt(total / dof)
    tail = (1.0 - LEVEL) / 2.0
    low = sigma * math.sqrt(dof / float(stats.chi2.ppf(1.0 - tail, dof)))
    high = sigma * math.sqrt(dof / float(stats.chi2.ppf(tail, dof)))
    return PooledSpread(sigma=sigma, low=low, high=high, dof=dof, groups=groups)
