"""fits.csv beside the report and the per-trace ``fits`` of summary.json (issue 51): every fit
with its parameters in seconds in scipy's order, status, objective and criterion; the best fit
is always an ok one."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ksptrace.report.compose import write_report
from ksptrace.studies.fits import EngineFit, Family
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.stats import fitting
from ksptrace.trace.synthetic import synthetic_trace

OPTIONS = AnalysisOptions(candidates=("johnsonsu", "norm", "lognorm"), mc_runs=2)


def _written(tmp_path: Path) -> tuple[list[dict[str, str]], dict[str, object]]:
    trace = synthetic_trace(2, 400, 1, "bcgs", seed=3)
    report = write_report(tmp_path / "r", [trace], OPTIONS, with_figures=False)
    with (report.directory / "fits.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    return rows, json.loads(report.summary.read_text())["traces"][0]


def test_every_fit_is_written_with_its_status_objective_and_criterion(tmp_path: Path) -> None:
    rows, trace = _written(tmp_path)
    assert sorted(r["family"] for r in rows) == sorted(OPTIONS.candidates)  # a row per fit
    fits = trace["fits"]
    assert isinstance(fits, dict)
    assert set(fits) == set(OPTIONS.candidates)
    for r in rows:
        want = fits[r["family"]]
        params = [float(p) for p in r["params"].split()]
        assert params == pytest.approx(want["params"], rel=1e-15)
        assert len(params) == {"johnsonsu": 4, "norm": 2, "lognorm": 3}[r["family"]]
        assert params[-1] > 0  # scale, in seconds: of the order of the iteration times
        assert params[-1] < 1.0
        assert r["status"] == want["status"]
        assert float(r["objective"]) == pytest.approx(want["objective"])
        assert float(r["criterion"]) == pytest.approx(2 * len(params) + 2 * want["objective"])
    best = [r for r in rows if r["best"] == "True"]
    assert len(best) == 1
    assert best[0]["family"] == trace["best_fit"]
    assert best[0]["status"] == "ok"
    # the best fit refitted on a random half of the iterations, checked on the other (issue 63)
    assert np.isfinite(float(best[0]["q99_miss_heldout_pct"]))
    assert 0 < float(best[0]["ks_heldout"]) < 1
    assert best[0]["tail_miss"] in ("True", "False")
    assert all(r["q99_miss_heldout_pct"] == r["tail_miss"] == "" for r in rows
               if r["best"] != "True")


def test_a_fit_that_is_not_ok_is_never_best_nor_modelled(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, before = _written(tmp_path / "a")
    winner = before["best_fit"]
    assert isinstance(winner, str)
    real = fitting.fit_family

    def unverified(fam: Family, data: object, seed: int = 0) -> EngineFit:
        fit = real(fam, data, seed)  # type: ignore[arg-type]
        return dataclasses.replace(fit, status="not converged", reason="forced by the test") \
            if fam.name == winner else fit

    monkeypatch.setattr(fitting, "fit_family", unverified)
    rows, after = _written(tmp_path / "b")
    assert after["best_fit"] != winner
    row = next(r for r in rows if r["family"] == winner)
    assert row["status"] == "not converged"
    assert row["best"] == "False"
    assert winner not in after["stationary"]  # type: ignore[operator]
    assert np.isfinite(float(row["objective"]))


def test_an_ok_fit_with_a_better_aic_but_no_model_says_why_it_was_passed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """best_fit is the least-AIC ok fit *that gives a stationary model*; an ok fit ranked above
    it says in fits.csv why it gives none (issue 61)."""
    rows, before = _written(tmp_path / "a")
    winner = before["best_fit"]
    assert isinstance(winner, str)
    assert all(r["passed_over"] == "" for r in rows)
    from ksptrace.errors import AnalysisError
    from ksptrace.studies.variability.stats import models

    real = models.stationary_model

    def refuse(name: str, *args: object) -> object:
        if name == winner:
            raise AnalysisError("the test refuses this model")
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(models, "stationary_model", refuse)
    rows, after = _written(tmp_path / "b")
    assert after["best_fit"] != winner
    row = next(r for r in rows if r["family"] == winner)
    assert row["status"] == "ok"
    assert row["best"] == "False"
    assert row["passed_over"] == "the test refuses this model"
    assert all(r["passed_over"] == "" for r in rows if r["family"] != winner)
