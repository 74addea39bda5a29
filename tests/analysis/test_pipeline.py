"""Guards of the per-trace analysis: a diverged fit is left out of the models, and says so."""

from __future__ import annotations

import dataclasses

import pytest

from ksptrace.analysis import models, pipeline
from ksptrace.analysis.pipeline import AnalysisOptions, analyze_trace
from ksptrace.trace.synthetic import synthetic_trace


def test_a_fit_far_from_the_data_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = synthetic_trace(nprocs=8, iterations=400, ranks_per_node=4, seed=3)
    real = models.stationary_model

    def broken_for_norm(family: str, dist: object, k: int, count: float) -> models.StationaryModel:
        model = real(family, dist, k, count)  # type: ignore[arg-type]
        if family == "norm":  # a fit whose mean landed far from the data, as nct can
            return dataclasses.replace(model, mean=-1e30, expected_max=-1e30)
        return model

    monkeypatch.setattr(pipeline.models, "stationary_model", broken_for_norm)
    options = AnalysisOptions(candidates=("norm", "lognorm"))
    result = analyze_trace(trace, options)
    assert [m.family for m in result.stationary] == ["lognorm"]
    assert any("norm left out" in note for note in result.notes)
