"""A priori prediction over configurations, not over every pair of runs (issue 35: a campaign of
a thousand traces asked for a quarter of a million Monte Carlo predictions)."""

from __future__ import annotations

import dataclasses

import pytest

from ksptrace.studies.variability.pages import apriori
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.studies.variability.stats import montecarlo
from ksptrace.trace.synthetic import synthetic_trace

OPTIONS = AnalysisOptions(mc_runs=2, candidates=("norm",))


def _runs(repetitions: int) -> list[TraceAnalysis]:
    out = []
    for p in (8, 16):
        for rep in range(repetitions):
            # the same n/P at both P: where the model claims validity (issue 52)
            a = analyze_trace(synthetic_trace(p, 90, 4, "gmres", seed=10 * p + rep,
                                              n=1000 * p), OPTIONS)
            out.append(dataclasses.replace(a, label=f"gmres-p{p}-r{rep}"))
    return out


def test_each_configuration_is_predicted_once_from_each_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    real = montecarlo.predict

    def counted(*args: object, **kw: object) -> montecarlo.Prediction:
        calls.append((str(args[5]), str(args[6])))
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(montecarlo, "predict", counted)
    table = apriori.apriori_table(_runs(3), runs=2)
    assert calls == [("gmres-p8-r0", "gmres-p16-r0"), ("gmres-p16-r0", "gmres-p8-r0")]
    assert len(table.frame) == 2
    assert (table.frame["status"] == "ok").all()
    assert any("4 runs repeat a configuration" in n for n in table.notes)


def test_without_repetitions_every_pair_of_runs_is_a_row() -> None:
    table = apriori.apriori_table(_runs(1), runs=2)
    assert len(table.frame) == 2
    assert not any("repeat" in n for n in table.notes)


def test_another_local_size_is_not_predicted() -> None:
    """Another n/P changes an iteration's work: no row, and a note that says why."""
    runs = [analyze_trace(synthetic_trace(p, 90, 4, "gmres", seed=p, n=10_000), OPTIONS)
            for p in (8, 16)]
    table = apriori.apriori_table(runs, runs=2)
    assert len(table.frame) == 0
    assert any("2 pairs of configurations with another n/P are not predicted" in n
               for n in table.notes)
