"""Issue 63: a failed Monte Carlo value (more than 11× off KSPSolve) appears nowhere in the
output, neither as a value nor as its standard error: summary.json holds null with its status,
the CSVs an empty cell beside the status, the pages the word "failed" (a whole-output scan)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from ksptrace.report.compose import write_report
from ksptrace.report.terminal import summary_lines
from ksptrace.studies.variability.run import pipeline
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.trace.synthetic import synthetic_trace

FAST = AnalysisOptions(candidates=("norm",), mc_runs=2)
FAILED_RUNS = np.array([11_000.0, 13_994.625])
"""The failed Monte Carlo's runs (s): mean 12497.3125 s, standard error 1497.3125 s."""
NUMBER = re.compile(r"\d[\d\u202f,]*(?:\.\d+)?(?:[eE][+\-]?\d+)?")
UNITS = (1.0, 1e3, 1e6, 1e9, 1e-3, 1 / 60, 1 / 3600)
"""A seconds value as printed in s, ms, µs, ns, ks, min or h."""


def _near(text: str, values: tuple[float, ...]) -> list[str]:
    """Every number of three or more significant digits in ``text`` that is one of ``values``
    (s) in some unit, to 0.1 % (a value printed to three digits or more)."""
    hits = []
    for m in NUMBER.finditer(text):
        token = m.group(0).replace("\u202f", "").replace(",", "")
        if len(re.sub(r"[eE].*", "", token).replace(".", "").strip("0")) < 3:
            continue
        x = float(token)
        for v in values:
            if any(abs(x - v * u) <= 0.001 * v * u for u in UNITS):
                hits.append(text[max(0, m.start() - 60):m.end() + 20])
    return hits


def _failed_simulation(*args: object, **kwargs: object) -> object:
    sim = REAL_SIMULATE(*args, **kwargs)  # type: ignore[operator]
    runs = FAILED_RUNS[: sim.runs].copy()
    runs.setflags(write=False)
    return dataclasses.replace(sim, standard=runs, pipelined=runs)


REAL_SIMULATE = pipeline.montecarlo.simulate


def test_a_failed_monte_carlo_value_appears_nowhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline.montecarlo, "simulate", _failed_simulation)
    traces = [synthetic_trace(4, 200, 2, "gmres", seed=s) for s in (1, 2)]
    report = write_report(tmp_path / "r", traces, FAST, with_figures=False)
    digest = json.loads(report.summary.read_text())
    mean = float(FAILED_RUNS.mean())
    stderr = float(FAILED_RUNS.std(ddof=1) / np.sqrt(FAILED_RUNS.size))
    for t in digest["traces"]:  # null with its status, not a number
        assert t["simulated"] is None, t
        assert t["simulated_stderr"] is None, t
        assert t["simulated_status"].startswith("failed: more than 11×"), t["simulated_status"]
    bad = []
    for path in sorted(report.directory.rglob("*")):
        if path.suffix in (".html", ".json", ".csv", ".txt", ".md"):
            bad += [f"{path.name}: {b}" for b in _near(path.read_text(), (mean, stderr))]
    bad += _near("\n".join(summary_lines(digest, "report.html")), (mean, stderr))
    assert not bad, bad[:5]
    table = (report.directory / "table2_3_prediction.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(table)))
    assert rows
    assert all(r["simulated_s"] == "" and r["simulated_stderr_s"] == "" for r in rows)
    assert all(r["simulated_status"].startswith("failed") for r in rows), rows[0]


def test_an_ok_monte_carlo_value_is_printed_with_status_ok(tmp_path: Path) -> None:
    """The scan's control: an ordinary Monte Carlo's value is there, status ok."""
    traces = [synthetic_trace(4, 200, 2, "gmres", seed=1)]
    report = write_report(tmp_path / "r", traces, FAST, with_figures=False)
    t = json.loads(report.summary.read_text())["traces"][0]
    assert t["simulated_status"] == "ok"
    assert t["simulated"] > 0
    assert _near(report.summary.read_text(), (t["simulated"],))
