"""Goodness of fit on a held-out half (issue 63), against known truth: the right family is
flagged rarely, a bulk-plus-detours mixture fitted by one family is flagged, and drift does not
fake a miss because the halves are random halves of the iterations, not the run's two ends."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.conclusions import answers
from ksptrace.studies.variability.run.flags import tail_flags
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats.detours import tail_check
from ksptrace.studies.variability.stats.halves import (
    half_fit,
    split_columns,
    tails_of,
)
from ksptrace.trace.synthetic import trace_from_times

SEEDS = range(20)
SHAPE = (2, 1000)
"""A demo-sized run: P = 2, K = 1000 (1000 values in each half)."""


def _lognormal(rng: np.random.Generator) -> np.ndarray:
    return 1e-3 * rng.lognormal(0.0, 0.1, SHAPE)


def _detoured(rng: np.random.Generator) -> np.ndarray:
    """The hidden traces' shape: a narrow bulk, 3 % detours 30x the median on average."""
    bulk = rng.normal(1e-3, 3e-5, SHAPE)
    return bulk + (rng.random(SHAPE) < 0.03) * rng.exponential(30e-3, SHAPE)


def test_the_halves_split_every_iteration_once_at_random() -> None:
    first, second = split_columns(101, seed=3)
    assert sorted([*first, *second]) == list(range(101))
    assert len(first) == 50
    # not the two ends of the run, nor alternate iterations: both halves span the run and
    # hold odd and even cycle positions alike
    assert first.min() < 10
    assert first.max() > 90
    assert second.min() < 10
    assert second.max() > 90
    assert 15 < int(np.sum(first % 2)) < 35
    with pytest.raises(AnalysisError, match="4 or more iterations"):
        split_columns(3)


@pytest.mark.parametrize(("family", "draw"), [("lognorm", _lognormal),
                                              ("norm", lambda r: r.normal(1e-3, 3e-5, SHAPE))])
def test_the_right_family_is_flagged_rarely(family: str, draw: object) -> None:
    """Measured when written: 0 of 100 flagged for each (and for gamma), q99 misses of at most
    6.3 %: the sampling error of a q99 from 1000 values (docs/analysis.md)."""
    misses = [half_fit(draw(np.random.default_rng(s)), family, seed=s).miss  # type: ignore[operator]
              for s in SEEDS]
    assert sum(abs(m) > 0.25 for m in misses) == 0
    assert max(abs(m) for m in misses) < 0.05


@pytest.mark.parametrize("family", ["norm", "lognorm", "johnsonsu"])
def test_a_bulk_plus_detours_mixture_fitted_by_one_family_is_flagged(family: str) -> None:
    """3 % detours: flagged in 28-30 of 30 when measured (2 %: 17-23 of 30, where the held-out
    q99's interval can reach the bulk; 1 %: 1-5 of 30, the q99 then sits at the bulk's edge
    and the family misses it by 2-5 %, nothing a q99 can tell)."""
    checks = [half_fit(_detoured(np.random.default_rng(s)), family, seed=s) for s in range(8)]
    assert sum(c.flagged for c in checks) >= 7
    assert all(c.miss < -0.5 for c in checks)  # the family's q99 is the bulk's


def test_the_bulk_plus_detours_model_holds_where_a_family_does_not() -> None:
    rng = np.random.default_rng(5)
    notes: list[str] = []
    tails = tails_of(_detoured(rng), "lognorm", 10_000, 0, notes)
    assert notes == []
    assert tails.best_fit is not None
    assert tails.best_fit.flagged
    assert tails.detour_check is not None
    assert not tails.detour_check.flagged
    assert tails.detours is not None
    assert tails.detours.rate == pytest.approx(0.03, rel=0.3)
    flags = tail_flags(tails)
    assert [(f.code, f.subject) for f in flags] == [("tail-miss", "bulk fit (lognorm)")]
    assert "misses the other half's" in flags[0].message


def test_drift_does_not_fake_a_miss() -> None:
    """A lognormal run whose level doubles from its first iteration to its last: the family
    refitted on a random half is not flagged, while the run's two ends differ in q99 by more
    than the flag, so a model fitted on the first half of the run would be."""
    ramp = np.linspace(1.0, 2.0, SHAPE[1])
    for s in range(5):
        times = _lognormal(np.random.default_rng(s)) * ramp
        assert not half_fit(times, "lognorm", seed=s).flagged
        early, late = (np.quantile(times[:, :500], 0.99), np.quantile(times[:, 500:], 0.99))
        assert late / early - 1 > 0.25


def test_the_analysis_carries_the_checks_and_flags_a_detoured_run() -> None:
    trace = trace_from_times(_detoured(np.random.default_rng(9)), ksp="gmres")
    a = analyze_trace(trace, AnalysisOptions(candidates=("norm", "lognorm"), mc_runs=2))
    assert a.tails is not None
    assert a.tails.best_fit is not None
    assert a.tails.best_fit.family == a.best_fit_name
    assert any(f.code == "tail-miss" and f.subject == f"bulk fit ({a.best_fit_name})"
               for f in a.flags)
    said = " ".join(answers.variability([a]).sentences)  # Q1 counts it
    assert ("the best fitted family misses it by more than 25 % and beyond its sampling error "
            "in 1 of 1") in said
    assert "the bulk-plus-detours model misses it by more than 25 % and beyond its sampling " \
           "error in 0 of 1" in said


def test_the_detour_model_on_its_own_shape_is_flagged_rarely() -> None:
    """The held-out q99 is compared within its own interval (order statistics, widened by √2
    for the model's error): on 3 % detours 30x the median the right model was flagged in 4 of
    100 runs when measured (1 % detours: 15 of 100, where q99 falls at the bulk's edge)."""
    flagged = [tail_check(_detoured(np.random.default_rng(s)), s).flagged for s in range(40)]
    assert sum(flagged) <= 4
