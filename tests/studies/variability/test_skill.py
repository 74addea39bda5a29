"""The skill score against a naive baseline (issue 63), on errors whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats.skill import MIN_SKILL, pair_skill, skill


def test_skill_is_one_minus_the_ratio_of_mean_absolute_errors() -> None:
    s = skill(np.array([1.0, -3.0]), np.array([4.0, -4.0]))
    assert s.model_mae_pct == 2.0
    assert s.baseline_mae_pct == 4.0
    assert s.score == 0.5
    assert s.closer == 2
    assert s.beats


def test_equal_errors_have_no_skill_and_do_not_beat_the_baseline() -> None:
    errors = np.array([3.1, -2.0, 0.5])
    s = skill(errors, -errors)  # the sign does not matter, only the size
    assert s.score == 0.0
    assert s.closer == 0
    assert not s.beats
    slightly = skill(errors * (1 - MIN_SKILL / 2), errors)
    assert slightly.score == pytest.approx(MIN_SKILL / 2)
    assert not slightly.beats  # better by less than MIN_SKILL is "no better"


def test_an_exact_baseline_gives_no_score_and_bad_input_says_so() -> None:
    assert skill(np.array([1.0]), np.array([0.0])).score is None
    assert not skill(np.array([1.0]), np.array([0.0])).beats
    with pytest.raises(AnalysisError, match="as many model as baseline"):
        skill(np.array([1.0, 2.0]), np.array([1.0]))
    with pytest.raises(AnalysisError, match="finite"):
        skill(np.array([np.nan]), np.array([1.0]))
    assert pair_skill(2.0, -4.0) == 0.5
    assert pair_skill(None, 1.0) is None
    assert pair_skill(1.0, 0.0) is None
