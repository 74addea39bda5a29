"""A prediction's skill against a naive baseline (issue 63).

An accuracy alone says little: a model fitted on one run "predicts" a repetition within 3 %
when the repetitions themselves differ by 3 %, and so does the naive predictor "the other
repetition's measured time" (persistence). The skill score compares the two on the same
targets:

    skill = 1 − MAE_model / MAE_baseline,

with MAE the mean absolute relative error over the predictions both made. Skill 1 is a perfect
model, 0 no better than the baseline, below 0 worse. The model *beats* the baseline only when
its skill is at least :data:`MIN_SKILL` (its mean error at least 10 % smaller); otherwise the
report says it is "no better than" the baseline. Pure: numbers in, a frozen dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError

MIN_SKILL = 0.10
"""The least skill that counts as beating the baseline (a mean error 10 % smaller)."""


@dataclass(frozen=True)
class Skill:
    """The model's and the baseline's errors on the same targets, and the skill score."""

    count: int
    """How many predictions both made (failed ones left out)."""
    model_mae_pct: float
    """Mean |relative error| of the model, per cent."""
    baseline_mae_pct: float
    """Mean |relative error| of the baseline, per cent."""
    score: float | None
    """1 − MAE_model / MAE_baseline; None when the baseline is exact (MAE 0)."""
    closer: int
    """In how many of ``count`` the model is strictly closer than the baseline."""

    @property
    def beats(self) -> bool:
        """Whether the model beats the baseline (skill at least :data:`MIN_SKILL`)."""
        return self.score is not None and self.score >= MIN_SKILL


def skill(model_pct: np.ndarray, baseline_pct: np.ndarray) -> Skill:
    """The skill of signed errors ``model_pct`` against ``baseline_pct`` (per cent, paired)."""
    m = np.abs(np.asarray(model_pct, dtype=np.float64))
    b = np.abs(np.asarray(baseline_pct, dtype=np.float64))
    if m.shape != b.shape or m.ndim != 1 or m.size == 0:
        raise AnalysisError(f"a skill score needs as many model as baseline errors (at least "
                            f"one), got {m.shape} and {b.shape}")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(b))):
        raise AnalysisError("a skill score needs finite errors; leave failed predictions out")
    model_mae, base_mae = float(m.mean()), float(b.mean())
    score = None if base_mae == 0.0 else 1.0 - model_mae / base_mae
    return Skill(count=int(m.size), model_mae_pct=model_mae, baseline_mae_pct=base_mae,
                 score=score, closer=int(np.sum(m < b)))


def pair_skill(model_pct: float | None, baseline_pct: float | None) -> float | None:
    """One prediction's skill, 1 − |model error| / |baseline error| (None when either is
    missing or the baseline is exact)."""
    if model_pct is None or baseline_pct is None or baseline_pct == 0.0:
        return None
    return 1.0 - abs(model_pct) / abs(baseline_pct)
