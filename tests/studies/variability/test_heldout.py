"""Q3 out of sample (issue 52): the model fitted on one run predicts another run it was not
fitted on, only where it claims validity, and the answer says which basis its numbers have."""

from __future__ import annotations

import dataclasses

import pytest

from ksptrace.studies.variability.conclusions import answers, heldout, heldout_skill
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
    # ... but the P = 1 run is no source (its s_k = 0: E[max of N] from it is its own time)
    only = heldout.same_local_size_predictions([one, two])
    assert [(h.fitted_on, h.predicts) for h in only] == [(two.label, one.label)]
    assert heldout.p1_sources([one, two]) == 1
    assert heldout_skill.P1_NOTE in " ".join(answers.models([one, two]).sentences)
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
    assert said.short.startswith("Out of sample (a repetition), the model predicts within 10 % "
                                 "in 1 of 2 (1 failed: off by more than 1000 %): ")
    table = heldout_skill.heldout_table([a, tiny])
    row = next(r for r in table.records() if r["predicts"] == tiny.label)
    assert row["err_pct"] is None
    assert row["predicted_s"] is None
    assert row["status"].startswith("failed")


def _timed(a: TraceAnalysis, measured: float, model: float) -> TraceAnalysis:
    """``a`` with its measured time and its non-stationary model's (standard) time set."""
    return dataclasses.replace(a, measured=measured, nonstationary=dataclasses.replace(
        a.nonstationary, standard=model))


def test_every_run_of_each_configuration_enters_the_other_p_predictions() -> None:
    """Issue 63: not only the first run of each configuration."""
    small = [_run(8, s, n=8000) for s in (1, 2)]
    large = [_run(16, s, n=16_000) for s in (3, 4)]
    found = heldout.same_local_size_predictions([*small, *large])
    assert len(found) == 8  # 2 x 2 upwards, 2 x 2 downwards
    assert {h.fitted_on for h in found} == {a.label for a in (*small, *large)}


def test_each_prediction_carries_persistence_and_the_table_its_skill() -> None:
    a, b = _run(8, 1), _run(8, 2)
    a, b = _timed(a, 1.20, 1.01), _timed(b, 1.00, 1.19)
    to_b = heldout.repetition_predictions([a, b])[0]  # a's model predicts b
    assert to_b.baseline == 1.20  # the other repetition's measured time
    assert to_b.error_pct == pytest.approx(1.0)
    assert to_b.baseline_error_pct == pytest.approx(20.0)
    assert to_b.skill == pytest.approx(1 - 1 / 20)
    row = heldout_skill.heldout_table([a, b]).records()[0]
    assert row["err_pct_baseline"] == pytest.approx(20.0)
    assert row["skill"] == pytest.approx(0.95)
    said = answers.models([a, b]).sentences[0]
    assert ("better than persistence, the other repetition's measured time (mean |error| "
            "0.9 % against 18.3 %, skill +0.95, closer in 2 of 2)") in said
    assert "no better than" not in said


def test_a_model_that_only_repeats_the_source_time_is_no_better_than_persistence() -> None:
    """The issue's figure: a run's model equals its own time to 0.13 %, so it predicts a
    repetition exactly as well as that repetition's measured time does."""
    a, b = _run(8, 1), _run(8, 2)
    a, b = _timed(a, 1.00, 1.0013), _timed(b, 1.08, 1.0799)
    said = answers.models([a, b]).sentences[0]
    assert "no better than persistence, the other repetition's measured time" in said, said
    assert "skill +0.01" in said
    assert "so this measures run-to-run reproducibility, not the model" in said


def test_the_scaled_baseline_extrapolates_the_measured_per_iteration_growth() -> None:
    one = _timed(_run(2, 1, n=4000), 1.00, 1.0)
    two = _timed(_run(4, 2, n=8000), 1.20, 1.2)
    four = _timed(_run(8, 3, n=16_000), 1.50, 1.5)
    configs = [[one], [two], [four]]
    # from P = 2 to 4 the time grew 1.2x per doubling: P = 8 is 1.2 * 1.2 = 1.44
    assert heldout.growth_scaled(two, four, configs) == pytest.approx(1.44)
    assert heldout.growth_scaled(one, four, configs) is None  # no smaller P than the source
    assert heldout.growth_scaled(four, two, configs) is None  # not towards a larger P
    up = next(h for h in heldout.same_local_size_predictions([one, two, four])
              if (h.fitted_on, h.predicts) == (two.label, four.label))
    assert up.scaled_error_pct == pytest.approx(100 * (1.44 / 1.5 - 1))
