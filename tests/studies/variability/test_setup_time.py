"""Set-up apart and the smallest sample fitted (issue 52): a trace that records its set-up is
compared without it, and a short solve gets no distribution fit, with a sentence why."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksptrace.harness.monitoring.setuptime import setup_seconds
from ksptrace.studies.variability.conclusions.findings import predictions
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace

FEW = AnalysisOptions(candidates=("norm",), mc_runs=2)


def _with_setup(trace: Trace, setup: float) -> Trace:
    """``trace`` whose KSPSolve holds ``setup`` more seconds, recorded as its set-up."""
    return dataclasses.replace(trace, solve_seconds=trace.solve_seconds + setup,
                               attrs={**trace.attrs, "setup_max": setup})


def test_a_recorded_set_up_is_left_out_of_the_measured_time_and_stated() -> None:
    plain = synthetic_trace(4, 200, 2, "cg", seed=3)
    setup = 2.0 * plain.solve_max  # GAMG's set-up can exceed the iterations
    a = analyze_trace(_with_setup(plain, setup), FEW)
    assert a.setup == pytest.approx(setup)
    assert a.measured == pytest.approx(plain.solve_max)
    assert any(n.startswith("set-up: ") for n in a.notes)
    ns = next(p for p in predictions(a) if p.key == "nonstationary")
    assert ns.error_pct is not None
    assert abs(ns.error_pct) < 50  # against the whole KSPSolve it would be about -67 %
    old = analyze_trace(plain, FEW)  # a trace without the attribute: as before
    assert old.setup is None
    assert old.measured == plain.solve_max


def test_setup_seconds_is_the_solve_minus_its_stamps_span() -> None:
    stamps = np.array([10.5, 10.6, 10.8])
    assert setup_seconds(1.0, stamps) == pytest.approx(0.7)
    assert setup_seconds(0.1, stamps) is None  # below zero: not the same clock
    assert setup_seconds(1.0, stamps[:1]) is None


def test_a_29_iteration_solve_gets_no_fitted_distribution_and_a_sentence_why() -> None:
    a = analyze_trace(synthetic_trace(2, 29, 2, "cg", seed=1), FEW)
    assert a.bulk is None
    assert a.stationary == ()
    why = next(n for n in a.notes if n.startswith("no distribution fitted"))
    assert "K = 29 values per rank, fewer than the 200" in why
    stationary = next(p for p in predictions(a) if p.key == "stationary")
    assert stationary.value is None
    assert stationary.why == why
