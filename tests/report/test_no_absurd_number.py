"""Issue 52: a failed model, prediction or fit is reported as failed with its reason, never as
a number: no error beyond ±1000 % appears on a page, in a CSV, in summary.json or in the
terminal summary ("fitted mean 470 s is 12984737 % above", "Monte Carlo +2842 %")."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

from ksptrace.report.compose import write_report
from ksptrace.report.terminal import summary_lines
from ksptrace.studies.variability.run import pipeline
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.stats import models
from ksptrace.trace.synthetic import synthetic_trace

FAST = AnalysisOptions(candidates=("norm",), mc_runs=2)
PERCENT = re.compile(r"([+\-−]?\d[\d\u202f,]*(?:\.\d+)?)[\u00a0 ]?%")


def _too_large(text: str) -> list[str]:
    """Every percentage in ``text`` beyond ±1000 %."""
    found = []
    for m in PERCENT.finditer(text):
        number = m.group(1).replace("\u202f", "").replace(",", "").replace("−", "-")
        if abs(float(number)) > 1000:
            found.append(text[max(0, m.start() - 60):m.end()])
    return found


def _csv_too_large(text: str) -> list[str]:
    """Every error column (``err_pct*``) of a CSV beyond ±1000 %."""
    bad = []
    for row in csv.DictReader(io.StringIO(text)):
        for key, value in row.items():
            if key and key.startswith("err_pct") and value and abs(float(value)) > 1000:
                bad.append(f"{key}={value}")
    return bad


def test_a_failed_model_prints_no_error_beyond_1000_percent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_simulate, real_model = pipeline.montecarlo.simulate, models.nonstationary_model

    def simulate(*args: object, **kwargs: object) -> object:  # a Monte Carlo gone wrong
        sim = real_simulate(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(sim, standard=sim.standard * 60.0)  # type: ignore

    def nonstationary(fits: models.UniformFits, count: float) -> models.NonStationaryModel:
        m = real_model(fits, count)
        return dataclasses.replace(m, standard=130_000 * m.standard)

    monkeypatch.setattr(pipeline.montecarlo, "simulate", simulate)
    monkeypatch.setattr(pipeline.models, "nonstationary_model", nonstationary)
    traces = [synthetic_trace(4, 200, 2, "gmres", seed=s) for s in (1, 2)]
    report = write_report(tmp_path / "r", traces, FAST, with_figures=False)
    digest = json.loads(report.summary.read_text())
    said = [str(f["message"]) for t in digest["traces"] for f in t["flags"]]
    assert any(m.startswith("failed: more than 11×") for m in said), said  # said, not hidden
    bad = []
    for path in sorted(report.directory.rglob("*")):
        if path.suffix in (".html", ".json", ".csv"):
            bad += [f"{path.name}: {b}" for b in _too_large(path.read_text())]
        if path.suffix == ".csv":
            bad += [f"{path.name}: {b}" for b in _csv_too_large(path.read_text())]
    bad += _too_large("\n".join(summary_lines(digest, "report.html")))
    assert not bad, bad[:5]
    q3 = next(a for a in digest["answers"] if a["key"] == "models")
    assert q3["basis"] == "held-out repetition"
    assert "2 of 2 failed (off by more than 1000 %)" in q3["sentences"][0]
