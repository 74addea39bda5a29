"""The report: written from trace files one at a time, grouped by configuration, with bad input
handled, findings first, errors as signed percentages and every empty cell explained."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import AnalysisError, TraceError
from ksptrace.report.compose import write_report, write_report_files
from ksptrace.studies.variability.pages import tables
from ksptrace.studies.variability.pages.runs import analyse
from ksptrace.studies.variability.pages.sections import SECTIONS, omission_section, section_of
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.trace.model import Trace
from ksptrace.trace.read import iter_traces
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

FAST = AnalysisOptions(candidates=("johnsonsu", "norm", "gamma"), fit_size=2000, mc_runs=2)


class Recorder:
    """A progress display that remembers what it was told."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.done: list[tuple[str, str]] = []
        self.notes: list[str] = []

    def step(self, text: str) -> None:
        self.steps.append(text)

    def advance(self, item: str, verdict: str = "ok") -> None:
        self.done.append((item, verdict))

    def note(self, text: str) -> None:
        self.notes.append(text)


def test_table1_has_a_row_per_solver_with_signed_percent_errors() -> None:
    analyses = [
        analyze_trace(synthetic_trace(64, 160, 16, ksp, seed=i), FAST)
        for i, ksp in enumerate(("gmres", "pgmres", "bcgs", "pipebcgs"))
    ]
    t = tables.model_table(analyses)
    rows = t.records()
    assert [r["ksp"] for r in rows] == ["gmres", "pgmres", "bcgs", "pipebcgs"]
    for r, a in zip(rows, analyses, strict=True):
        assert r["KSPSolve_s"] == a.measured
        assert r["sum_k_max_p_T_s"] == a.lockstep_sum
        assert r["max_p_sum_k_T_s"] == a.rank_sum_max
        e = r["E_hat_unif_s"]
        assert isinstance(e, float)
        # A signed percentage, not a fraction.
        assert r["err_pct_hat_unif"] == pytest.approx(100 * (e - a.measured) / a.measured)
        # Bounds are reported for synchronising methods only, as in the paper.
        assert (r["cramer_s"] is None) == a.pipelined
        assert r["best_fit"] == a.best_fit_name
    header = t.to_csv().splitlines()[0].split(",")
    assert all("pct" in c for c in header if c.startswith("err"))
    assert rows[1]["K"] == 150  # pgmres: fill iterations dropped from bulk statistics
    # The HTML table says why a cell is empty, and shows errors as signed percentages.
    page = t.to_html()
    assert "pipelined: no Cramér bound" in page
    assert re.search(r"\([+\u2212]\d+\.\d\u00a0%\)", page)


def test_report_from_trace_files(tmp_path: Path) -> None:
    paths: list[str | os.PathLike[str]] = []
    # the last run shares n/P with the first, where a priori prediction is valid (issue 52)
    for i, (ksp, p, n) in enumerate([("gmres", 32, 10**6), ("gmres", 64, 10**6),
                                     ("pgmres", 32, 10**6), ("gmres", 64, 2 * 10**6)]):
        path = tmp_path / f"t{i}.h5"
        write_trace(synthetic_trace(p, 128, 8, ksp, seed=i, n=n), path)
        paths.append(path)
    rec = Recorder()
    report = write_report(tmp_path / "out", iter_traces(paths), FAST, rec)
    page = report.html.read_text()
    # Issue 30: the main page answers the questions first; each run has its own page, and
    # every figure is a PNG file beside the page that shows it (nothing inline, nothing remote).
    assert "data:image/png;base64," not in page
    order = [page.index(s) for s in ('id="answers"', 'id="runs"', 'id="failures"',
                                     'id="methods"')]
    assert order == sorted(order)
    out = report.directory
    runs = sorted((out / "runs").glob("*.html"))
    assert [r.name for r in runs] == ["run-1.html", "run-2.html", "run-3.html", "run-4.html"]
    for i, run in enumerate(runs):
        assert f'href="runs/{run.name}"' in page
        text = run.read_text()
        assert 'href="../report.html"' in text
        assert "data:image" not in text
        assert "<script" not in text
        assert 'src="http' not in text
        for _, title in SECTIONS:
            assert f". {title}</h3>" in text
        figures = re.findall(r'<img alt="[^"]*" src="\./([^"]+)"', text)
        assert len(figures) >= 4, (run.name, figures)
        assert all((out / "runs" / f).read_bytes().startswith(b"\x89PNG") for f in figures)
        assert f"t{i}.h5" in text or f"run-{i + 1}" in run.name
    assert "synthetic gmres n=10⁶ P=32" in (out / "runs" / "run-1.html").read_text()
    single = write_report_files(tmp_path / "one", paths[:1], FAST, single_file=True)
    inline = single.html.read_text()
    assert inline.count("data:image/png;base64,") >= 4
    assert 'id="run-1"' in inline
    assert 'href="#run-1"' in inline
    assert not (single.directory / "runs").exists()
    summary = json.loads(report.summary.read_text())
    assert len(summary["traces"]) == 4
    assert {Path(p.name).stem for p in report.csv} >= {"table1_models", "scaling_nprocs"}
    assert len(summary["tables"]["scaling_nprocs"]) == 2
    assert len(summary["tables"]["apriori"]) == 2  # the two gmres traces predict each other
    heldout = summary["tables"]["heldout"]
    assert len([r for r in heldout if r["basis"] == "same n/P at another P"]) == 2  # E[max of N]
    # ... and the smaller P predicts the larger through the bulk-plus-detours model (issue 63)
    assert len([r for r in heldout if r["basis"] == "larger P (bulk plus detours)"]) == 1
    assert all("err_pct" in r for r in summary["tables"]["apriori"])
    assert any("KS tests" in s for s in rec.steps)
    assert [v for _, v in rec.done] == ["ok"] * 4


def _nan_trace() -> Trace:
    good = synthetic_trace(8, 20, 4, seed=1)
    stamps = np.array(good.stamps)
    stamps[3, 5] = np.nan
    return Trace(stamps, good.residual_norms, good.node_ids, good.hostnames, good.solve_seconds,
                 dict(good.attrs), path="nan.h5")


def test_bad_traces_are_named_once_and_single_rank_says_why(tmp_path: Path) -> None:
    one_rank = synthetic_trace(1, 40, 1, "gmres", seed=2)
    unreadable = TraceError("gone.h5: unreadable trace (truncated); rerun the run that made it")
    rec = Recorder()
    report = write_report(tmp_path / "r", [_nan_trace(), unreadable, one_rank], FAST, rec,
                          with_figures=False)
    skipped = [(item, v) for item, v in rec.done if v != "ok"]
    assert [item for item, _ in skipped] == ["nan.h5", "gone.h5"]
    assert all(item not in v for item, v in skipped)  # the name once per line
    assert report.analysed == 1
    notes = json.loads(report.summary.read_text())["traces"][0]["notes"]
    assert any("P = 1" in n for n in notes)
    page = report.html.read_text()
    run_page = (report.directory / "runs" / "run-1.html").read_text()
    assert run_page.count("P = 1: no rank pairs") >= 2  # the KS and node variance sections
    assert "gone.h5" in page
    assert "nan.h5" in page
    with pytest.raises(AnalysisError, match="no trace could be analysed"):
        write_report(tmp_path / "none", [_nan_trace()], FAST)
    assert not (tmp_path / "none").exists()


def test_analyse_keeps_results_not_traces() -> None:
    res = analyse([synthetic_trace(8, 40, 4, "gmres", seed=3)], FAST, with_figures=False)
    (d,) = res.analysed
    for value in vars(d).values():
        assert not isinstance(value, Trace)


@pytest.mark.parametrize(
    ("key", "section"),
    [("ks-heatmap", "ks"), ("rank-histograms", "distributions"), ("colormap", "distributions"),
     ("bulk-fit", "fits"), ("uniform-fits", "models"), ("uniform-parameters", "montecarlo"),
     ("iteration-vs-rank", "nodes")],
)
def test_figures_land_in_the_paper_sections(key: str, section: str) -> None:
    assert section_of(key) == section


@pytest.mark.parametrize(
    ("line", "section"),
    [("P = 2: one rank pair (D = 0.02 against the threshold 0.111); no KS heatmap", "ks"),
     ("P = 2: too few ranks for a scatter of the iteration times against the rank", "nodes"),
     ("P = 1: sₖ is constant (0 s): no sₖ histogram", "montecarlo"),
     ("every equal-work iteration has sₖ = 0: no uniform-fit figure", "models"),
     ("every iteration time of the ranks shown is equal: no per-rank histogram",
      "distributions")],
)
def test_omission_lines_land_in_one_section(line: str, section: str) -> None:
    assert omission_section(line) == section


def test_an_empty_table_says_why_instead_of_showing_headers(tmp_path: Path) -> None:
    tiny = synthetic_trace(2, 3, 2, "bcgs", seed=1)  # 6 values: too few for any fit
    report = write_report(tmp_path / "r", [tiny], FAST, with_figures=False)
    page = (report.directory / "runs" / "run-1.html").read_text()
    fits = page[page.index("4. Bulk distribution fits"):page.index("5. Stationary")]
    assert "<table" not in fits
    assert "no distribution fitted: K = 3 values per rank" in fits
    montecarlo = page[page.index("6. Johnson S_U Monte Carlo"):]
    assert "no fit: K = 3 &lt; 8: too few iterations" in montecarlo


def test_analyse_file_lets_go_of_its_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis leaves reference cycles that hold the trace; analyse_file collects them for
    a trace of RELEASE_BYTES or more (here: any), so a worker never holds one large trace while
    it reads the next (peak memory: one trace, not two)."""
    import gc
    import weakref

    import ksptrace.studies.variability.pages.runs as report

    path = write_trace(synthetic_trace(16, 60, 4, "cg", seed=5), tmp_path / "t.h5")
    seen: list[weakref.ref[Trace]] = []

    def watched(paths: list[str]) -> object:
        for item in iter_traces(paths):
            if isinstance(item, Trace):
                seen.append(weakref.ref(item))
            yield item

    monkeypatch.setattr(report, "iter_traces", watched)
    monkeypatch.setattr(report, "RELEASE_BYTES", 0)
    gc.collect()
    gc.disable()  # only analyse_file's own collection may free the trace
    try:
        result = report.analyse_file(str(path), AnalysisOptions(), with_figures=True)
        assert isinstance(result, report.Analysed)
        assert len(seen) == 1
        assert seen[0]() is None
    finally:
        gc.enable()


def test_a_figure_left_out_says_why_on_its_page(tmp_path: Path) -> None:
    """Issue 30: no empty plots. At P = 1 every sₖ is 0, so the sₖ histogram is not drawn and
    the run's page gives the reason where the figure would be; the figures drawn are files."""
    report = write_report(tmp_path / "r", [synthetic_trace(1, 120, 1, "gmres", seed=2)], FAST)
    page = (report.directory / "runs" / "run-1.html").read_text()
    assert re.search(r'class="why">P = 1: sₖ is constant \(0 s\): no sₖ histogram<', page)
    alts = re.findall(r'<img alt="([^"]*)"', page)
    assert alts
    assert not any("sₖ" in alt and "aₖ" not in alt for alt in alts)
