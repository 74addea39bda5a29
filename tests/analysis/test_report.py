"""The report: written from trace files, grouped by configuration, with bad input handled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ksptrace.analysis import tables
from ksptrace.analysis.pipeline import AnalysisOptions, analyze_trace
from ksptrace.analysis.report import group_by_config, write_report
from ksptrace.errors import AnalysisError
from ksptrace.trace.io import read_trace, write_trace
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace

FAST = AnalysisOptions(candidates=("johnsonsu", "norm", "gamma"), fit_size=2000, mc_runs=2)


def test_table1_has_a_row_per_solver_with_relative_errors() -> None:
    analyses = [
        analyze_trace(synthetic_trace(64, 160, 16, ksp, seed=i), FAST)
        for i, ksp in enumerate(("gmres", "pgmres", "bcgs", "pipebcgs"))
    ]
    t = tables.model_table(analyses)
    rows = t.records()
    assert [r["ksp"] for r in rows] == ["gmres", "pgmres", "bcgs", "pipebcgs"]
    for r, a in zip(rows, analyses, strict=True):
        assert r["KSPSolve"] == a.measured
        e = r["E_hat_unif"]
        assert isinstance(e, float)
        assert r["err_hat_unif"] == pytest.approx((e - a.measured) / a.measured)
        # Bounds are reported for synchronising methods only, as in the paper.
        assert (r["cramer"] is None) == a.pipelined
    assert "KSPSolve" in t.to_csv().splitlines()[0]
    assert rows[1]["K"] == 150  # pgmres: fill iterations dropped from bulk statistics


def test_report_from_trace_files(tmp_path: Path) -> None:
    paths = []
    for i, (ksp, p) in enumerate([("gmres", 32), ("gmres", 64), ("pgmres", 32)]):
        path = tmp_path / f"t{i}.h5"
        write_trace(synthetic_trace(p, 128, 8, ksp, seed=i), path)
        paths.append(path)
    traces = [read_trace(p) for p in paths]
    steps: list[str] = []
    report = write_report(
        tmp_path / "out", traces, options=FAST, progress=lambda s, f: steps.append(s)
    )
    page = report.html.read_text()
    assert page.count("data:image/png;base64,") >= 3 * 6
    assert "Johnson S_U across P" in page
    assert "src='http" not in page
    summary = json.loads(report.summary.read_text())
    assert len(summary["traces"]) == 3
    assert {Path(p.name).stem for p in report.csv} >= {"table1_models", "scaling_nprocs"}
    assert len(summary["tables"]["scaling_nprocs"]) == 2
    assert len(summary["tables"]["apriori"]) == 2  # the two gmres traces predict each other
    assert any("KS tests" in s for s in steps)
    assert len(group_by_config(traces)) == 3


def _nan_trace() -> Trace:
    good = synthetic_trace(8, 20, 4, seed=1)
    stamps = np.array(good.stamps)
    stamps[3, 5] = np.nan
    return Trace(
        stamps,
        good.residual_norms,
        good.node_ids,
        good.hostnames,
        good.solve_seconds,
        dict(good.attrs),
        path="nan.h5",
    )


def test_nan_traces_are_skipped_and_single_rank_says_why(tmp_path: Path) -> None:
    one_rank = synthetic_trace(1, 40, 1, "gmres", seed=2)
    skipped: list[str] = []
    report = write_report(
        tmp_path,
        [_nan_trace(), one_rank],
        options=FAST,
        with_figures=False,
        on_skip=lambda s: skipped.append(s.path),
    )
    assert skipped == ["nan.h5"]
    assert report.analysed == 1
    notes = json.loads(report.summary.read_text())["traces"][0]["notes"]
    assert any("P = 1" in n for n in notes)
    with pytest.raises(AnalysisError, match="no trace could be analysed"):
        write_report(tmp_path / "none", [_nan_trace()], options=FAST)
