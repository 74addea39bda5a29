"""Q3 out of sample (issue 52): the model fitted on one run predicts another run it was not
fitted on, only where it claims validity, and the answer says which basis its numbers have."""

from __future__ import annotations

import dataclasses

import pytest

from ksptrace.studies.variability.conclusions import answers, heldout
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.studies.variability.stats import models
from ksptrace.trace.synthetic import synthetic_trace

FEW = AnalysisOptions(candidates=("norm",), mc_runs=2)


def _run(nprocs: int, seed: int, n: int = 80_000, ksp: str = "gmres") -> TraceAnalysis:
    return analyze_trace(synthetic_trace(nprocs, 120, 4, ksp, seed=seed, n=n), FEW)


def test_a_repetition_is_predicted_by_the_other_runs_model() -> None:
    a, b = _run(8, 1), _run(8, 2)
    found = heldout.repetition_predictions([a, b])
    assert [(h.fitted_on, h.predicts) for h in found] == [(a.label, b.label),
                                                          (b.label, a.label)]
    first = found[0]
    assert first.basis == heldout.REPETITION
    assert first.predicted == a.nonstationary.standard  # a's fit, never b's own
    assert first.error_pct == pytest.approx(100 * (a.nonstationary.standard / b.measured - 1))
    said = answers.models([a, b])
    assert said.basis == "held-out repetition"
    assert said.sentences[0].startswith("Out of sample, on another repetition of the same "
                                        "configuration")
    assert any(s.startswith("In sample (") and "a fit, not a prediction" in s
               for s in said.sentences)


def test_without_held_out_data_the_answer_is_in_sample_and_says_so() -> None:
    said = answers.models([_run(8, 1), _run(8, 3, ksp="cg")])
    assert said.basis == "in-sample fit"
    assert said.sentences[0].startswith("Cannot tell how well the models predict")
    assert not any("Out of sample" in s for s in said.sentences)


def test_the_same_local_size_at_another_p_goes_through_e_max_of_n() -> None:
    small, large = _run(8, 1, n=8000), _run(16, 2, n=16_000)
    found = heldout.same_local_size_predictions([small, large])
    assert len(found) == 2
    up = next(h for h in found if h.fitted_on == small.label)
    assert up.basis == heldout.SAME_LOCAL_SIZE
    expect = models.nonstationary_model(small.uniform, large.count).standard
    assert up.predicted == pytest.approx(expect)
    assert answers.models([small, large]).basis == "same n/P at another P"
    # one rank a node at P = 1, two at P = 2: still one kind (the ranks per node follow P)
    one = analyze_trace(synthetic_trace(1, 120, 1, "gmres", seed=4, n=1000), FEW)
    two = analyze_trace(synthetic_trace(2, 120, 2, "gmres", seed=5, n=2000), FEW)
    assert len(heldout.same_local_size_predictions([one, two])) == 2
    # another n/P is not predicted
    other = _run(16, 2, n=32_000)
    assert heldout.same_local_size_predictions([small, other]) == ()
    assert heldout.other_size_pairs([small, other]) == 2


def test_a_prediction_beyond_1000_percent_is_failed_not_a_number() -> None:
    a, b = _run(8, 1), _run(8, 2)
    tiny = dataclasses.replace(b, measured=a.nonstationary.standard / 20)
    found = heldout.repetition_predictions([a, tiny])
    failed = next(h for h in found if h.predicts == tiny.label)
    assert failed.error_pct is None
    assert failed.why.startswith("failed: off by more than 1000 %")
    said = answers.models([a, tiny])
    assert "1 of 2 failed (off by more than 1000 %)" in said.sentences[0]
    table = heldout.heldout_table([a, tiny])
    row = next(r for r in table.records() if r["predicts"] == tiny.label)
    assert row["err_pct"] is None
    assert row["predicted_s"] is None
    assert row["status"].startswith("failed")
