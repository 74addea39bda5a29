"""The report composes every study one way (issue 52): its answers, tables, CSV files and
summary.json keys come from the registered studies' results only, the variability study's
included. Were the report to compose a study by hand again, a registry without it would
still show that study's tables; here it must not."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ksptrace.report.compose import write_results
from ksptrace.studies import registry
from ksptrace.studies.result import ACROSS, Answer, Part, StudyResult
from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability.pages.runs import Results, analyse
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.trace.synthetic import synthetic_trace

FAST = AnalysisOptions(candidates=("johnsonsu", "norm"), fit_size=2000, mc_runs=2)


def _table(name: str, title: str) -> Table:
    return Table(name, title, Rows.of([{"run": "r1", "value": 1.5}]))


def fake(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
         with_figures: bool = True) -> StudyResult:
    """A study of its own, placed where the variability study's parts go."""
    return StudyResult(
        key="fake", title="A fake study",
        answers=(Answer("fake-q", "Does the report ask only its studies?",
                        (f"Yes, over {len(analyses)} runs.",), basis="in-sample fit"),),
        parts=(Part(place="fake-q", tables=(_table("fake_under", "Under the answer"),)),
               Part(title="the fake parameters", place=ACROSS,
                    tables=(_table("fake_across", "Across"),)),
               Part(unshown=(_table("fake_csv", "CSV only"),))),
        summary={"fake": {"runs": len(analyses)}})


@pytest.fixture(scope="module")
def results() -> Results:
    return analyse([synthetic_trace(4, 60, 2, ksp, seed=i)
                    for i, ksp in enumerate(("gmres", "bcgs"))], FAST, with_figures=False)


def test_only_the_registered_studies_reach_the_report(
        tmp_path: Path, results: Results, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "STUDIES", {"fake": f"{__name__}:fake"})
    report = write_results(tmp_path / "r", results)
    assert sorted(p.name for p in report.csv) == ["fake_across.csv", "fake_csv.csv",
                                                  "fake_under.csv"]
    assert sorted(p.name for p in report.directory.glob("*.csv")) == sorted(
        p.name for p in report.csv)
    digest = json.loads(report.summary.read_text())
    assert [a["key"] for a in digest["answers"]] == ["fake-q"]
    assert digest["answers"][0]["basis"] == "in-sample fit"
    assert digest["fake"] == {"runs": 2}
    assert "traces" not in digest
    assert "fastest" not in digest
    page = report.html.read_text()
    assert "Does the report ask only its studies?" in page
    answer = page[page.index('id="q-fake-q"'):page.index('id="runs"')]
    assert "Under the answer" in answer
    assert "fake_under.csv" in answer
    assert "table1_models" not in page
    assert "Which solver is fastest where?" not in page
    across = (report.directory / "across.html").read_text()
    assert "fake_across.csv" in across
    assert "scaling_nprocs" not in across
    assert not (report.directory / "studies").exists()  # nothing placed on a page of its own


def test_the_variability_study_is_one_registered_study(
        tmp_path: Path, results: Results) -> None:
    """Through the registry it gives what the report showed: the four answers, Table 1 under
    the models' answer, the scaling tables across configurations, traces and fastest."""
    assert next(iter(registry.STUDIES)) == "variability"
    report = write_results(tmp_path / "r", results)
    digest = json.loads(report.summary.read_text())
    assert [a["key"] for a in digest["answers"]][:4] == ["variability", "pipelined", "models",
                                                        "fastest"]
    assert len(digest["traces"]) == 2
    assert "configurations" in digest["fastest"]
    assert list(digest["tables"])[:8] == [
        "table1_models", "table2_3_prediction", "heldout", "apriori", "scaling_nprocs",
        "scaling_n", "variability", "fits"]
    page = report.html.read_text()
    models = page[page.index('id="q-models"'):page.index('id="q-fastest"')]
    assert "table1_models.csv" in models
    assert "heldout.csv" in models
    assert not (report.directory / "studies" / "variability.html").exists()
