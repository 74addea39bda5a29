"""Guards of the per-trace analysis: a diverged fit is left out of the models, and says so."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksptrace.studies.variability.run import pipeline
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats import models
from ksptrace.trace.synthetic import synthetic_trace


def test_a_fit_far_from_the_data_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = synthetic_trace(nprocs=8, iterations=400, ranks_per_node=4, seed=3)
    real = models.stationary_model

    def broken_for_norm(family: str, dist: object, k: int, count: float) -> models.StationaryModel:
        model = real(family, dist, k, count)
        if family == "norm":  # a fit whose mean landed far from the data, as nct can
            return dataclasses.replace(model, mean=-1e30, expected_max=-1e30)
        return model

    monkeypatch.setattr(pipeline.models, "stationary_model", broken_for_norm)
    options = AnalysisOptions(candidates=("norm", "lognorm"))
    result = analyze_trace(trace, options)
    assert [m.family for m in result.stationary] == ["lognorm"]
    assert any("norm left out" in note for note in result.notes)


def test_a_heavy_tailed_parameter_fit_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    from ksptrace.studies.variability.stats import montecarlo

    trace = synthetic_trace(nprocs=8, iterations=400, ranks_per_node=4, seed=3)
    real = montecarlo.fit_parameters

    def shifted(*args: object, **kwargs: object) -> montecarlo.ParameterFits:
        fits = real(*args, **kwargs)  # type: ignore[arg-type]
        lower = dataclasses.replace(fits.lower, loc=fits.lower.loc + 10 * abs(fits.lower.loc))
        return montecarlo.ParameterFits(lower=lower, span=fits.span)

    monkeypatch.setattr(pipeline.montecarlo, "fit_parameters", shifted)
    result = analyze_trace(trace, AnalysisOptions(candidates=("norm",)))
    flagged = [f for f in result.flags if f.subject.startswith("JSU fit of")]
    assert len(flagged) == 1
    assert flagged[0].subject == "JSU fit of a_k"
    assert flagged[0].code == "fit-mean-far"
    assert "unreliable" in flagged[0].message
    again = analyze_trace(trace, AnalysisOptions(candidates=("norm",)))
    assert again.flags == result.flags  # monkeypatch still active: same verdict
    monkeypatch.undo()
    assert not [f for f in analyze_trace(trace, AnalysisOptions(candidates=("norm",))).flags
                if f.subject.startswith("JSU fit of")]


def test_blocked_mean_and_std_equal_numpys_to_rounding(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    x = rng.lognormal(-7.0, 1.0, size=(301, 77))
    monkeypatch.setattr(pipeline, "STD_BLOCK_ELEMENTS", 1000)  # many blocks
    mean, std = pipeline.mean_std(x)
    assert mean == pytest.approx(float(x.mean()), rel=1e-14)
    assert std == pytest.approx(float(x.std()), rel=1e-13)
    assert pipeline.mean_std(x[:1]) == pytest.approx((float(x[:1].mean()), float(x[:1].std())))
