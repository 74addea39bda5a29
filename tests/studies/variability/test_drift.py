"""Q1's slow part and bimodality (issue 63), on iteration times of known drift, level shifts
and modes: a run at 1.73 ms per iteration for its first 30 % and 1.01 ms after is one level
shift, not "random"; a bimodal run is named even when a unimodal fit converges."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksptrace.studies.variability.conclusions import answers
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats.cycles import cycle_layout
from ksptrace.studies.variability.stats.drift import modality
from ksptrace.studies.variability.stats.variance_split import VarianceSplit, variance_split
from ksptrace.trace.synthetic import synthetic_trace

P, K, RESTART = 4, 2000, 30


def _split(t: np.ndarray, ksp: str = "gmres") -> VarianceSplit:
    split = variance_split(t, cycle_layout(K, ksp, RESTART))
    assert split is not None
    return split


def _noise(rng: np.random.Generator, sd: float = 5e-5) -> np.ndarray:
    return rng.normal(0.0, sd, (P, K))


def test_the_issues_level_shift_is_found_with_its_levels_and_share() -> None:
    rng = np.random.default_rng(1)
    level = np.where(np.arange(K) < 0.3 * K, 1.73e-3, 1.01e-3)
    split = _split(level + _noise(rng), "bcgs")
    slow = split.slow
    assert slow is not None
    assert slow.kind == "level shift"
    assert slow.shifts[0] == pytest.approx(0.3 * K, abs=K / 24)  # one block's resolution
    assert slow.levels == pytest.approx((1.73e-3, 1.01e-3), rel=0.02)
    true = level.var() / (level.var() + 5e-5**2)
    assert slow.share == pytest.approx(true, abs=0.03)
    assert split.random == pytest.approx(1 - true, abs=0.03)
    assert split.modes is not None
    assert not split.modes.bimodal  # the shift is the slow part, not a second mode


def test_a_linear_drift_on_top_of_the_restart_cycle_is_drift_of_its_share() -> None:
    rng = np.random.default_rng(2)
    work = 1e-3 * (1 + 0.02 * (np.arange(K) % RESTART))
    drift = np.linspace(0.0, 0.5e-3, K)
    t = work + drift + _noise(rng)
    split = _split(t)
    assert split.slow is not None
    assert split.slow.kind == "drift"
    true = drift.var() / t.var()
    assert split.slow.share == pytest.approx(true, rel=0.1)
    assert split.cycle == pytest.approx(work.var() / t.var(), rel=0.1)


def test_a_slow_wander_is_drift_and_stationary_noise_is_random() -> None:
    rng = np.random.default_rng(3)
    wander = np.zeros(K)
    steps = rng.normal(0.0, 3e-5, K)
    for i in range(1, K):
        wander[i] = 0.95 * wander[i - 1] + steps[i]
    split = _split(1e-3 + wander + _noise(rng))
    assert split.slow is not None
    assert split.slow.kind == "drift"
    assert split.slow.lag1 is not None
    assert split.slow.lag1 >= 0.5
    for t in (1e-3 + _noise(rng), 1e-3 * rng.lognormal(0.0, 0.3, (P, K)),
              1e-3 + _noise(rng) + (rng.random((P, K)) < 0.02) * rng.exponential(5e-3, (P, K))):
        quiet = _split(t)
        assert quiet.slow is not None
        assert (quiet.slow.kind, quiet.slow.share) == ("none", 0.0)
        assert quiet.random == quiet.rest
        assert quiet.modes is not None
        assert not quiet.modes.bimodal  # skewed or heavy-tailed is not bimodal


def test_two_modes_are_bimodal_with_their_weights_and_means() -> None:
    rng = np.random.default_rng(4)
    upper = rng.random((P, K)) < 0.3
    t = 1e-3 + np.where(upper, 0.4e-3, 0.0) + _noise(rng)
    split = _split(t, "bcgs")
    assert split.modes is not None
    assert split.modes.bimodal
    assert split.modes.weights == pytest.approx((0.7, 0.3), abs=0.02)
    assert split.modes.means == pytest.approx((1.0e-3, 1.4e-3), rel=0.02)
    assert split.slow is not None
    assert split.slow.kind == "none"


def test_too_few_values_give_no_verdict() -> None:
    assert modality(np.ones(10)) is None
    assert modality(np.ones(100)) is None  # no spread


def test_q1_names_the_shift_and_the_modes_and_splits_the_rest() -> None:
    rng = np.random.default_rng(6)
    base = analyze_trace(synthetic_trace(P, 200, P, "bcgs", seed=1, n=40_000),
                         AnalysisOptions(candidates=("norm",), mc_runs=2))
    level = np.where(np.arange(K) < 0.3 * K, 1.73e-3, 1.01e-3)
    shifted = dataclasses.replace(base, iterations=K,
                                  variance=_split(level + _noise(rng), "bcgs"))
    two = 1e-3 + np.where(rng.random((P, K)) < 0.3, 0.4e-3, 0.0) + _noise(rng)
    bimodal = dataclasses.replace(base, variance=_split(two, "bcgs"))
    said = answers.variability([shifted, bimodal]).sentences
    text = " ".join(said)
    assert "level shifts and drift take" in text
    assert ("Not random: 1 run shifts level (BCGS synthetic n = 40\u202f000, P = 4: 1.73 ms per "
            "iteration for its first 30 %, then 1.01 ms") in text
    assert ("1 run is bimodal (BCGS synthetic n = 40\u202f000, P = 4: modes 1 ms and 1.4 ms ("
            in text)
    assert "which no single fitted family describes" in text
