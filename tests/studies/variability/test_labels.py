"""Issue 63's labels: an in-sample fit is never called a prediction, the KSPSolve time names how
it was timed, and the terminal names the caveats it counts."""

from __future__ import annotations

import dataclasses

from ksptrace.report.terminal import summary_lines
from ksptrace.studies.variability.conclusions.findings import finding
from ksptrace.studies.variability.pages import sections, tables
from ksptrace.studies.variability.pages.runs import Analysed
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.trace.synthetic import synthetic_trace

FEW = AnalysisOptions(candidates=("norm",), mc_runs=2)


def _analysis(**attrs: object) -> TraceAnalysis:
    t = synthetic_trace(2, 200, 2, "gmres", seed=1)
    return analyze_trace(dataclasses.replace(t, attrs={**t.attrs, **attrs}), FEW)


def test_the_run_page_calls_its_models_in_sample_fits_not_predictions() -> None:
    a = _analysis()
    table = tables.models_table(a)
    assert "predicted" not in table.frame.columns
    assert "error" not in table.frame.columns
    assert {"fitted (in sample)", "in-sample error"} <= set(table.frame.columns)
    assert "in sample" in table.title
    assert "in sample" in tables.prediction_table([a]).title
    page = sections.run_section(Analysed(a), finding(a, ""), FEW)
    assert "in sample" in page["parts"][-1]["lead"]  # the Monte Carlo against its own run


def test_the_kspsolve_row_says_how_it_was_timed_never_the_log_when_it_was_off() -> None:
    wtime = _analysis(event_log="off", solve_time_source="MPI_Wtime around KSPSolve on each rank")
    page = sections.run_section(Analysed(wtime), finding(wtime, ""), FEW)
    label = page["measured"][0][0]
    assert label == "KSPSolve (slowest rank, MPI_Wtime around KSPSolve)"
    logged = _analysis(solve_time_source="PETSc's KSPSolve event on each rank")
    page = sections.run_section(Analysed(logged), finding(logged, ""), FEW)
    assert page["measured"][0][0] == "KSPSolve (slowest rank, PETSc's KSPSolve event)"


def test_the_terminal_names_the_caveats_it_counts() -> None:
    traces = [{"problem": "p", "n": 1, "ksp": "cg", "nprocs": 1, "kspsolve": 1.0,
               "caveats": ["with injected noise"]} for _ in range(6)]
    first = summary_lines({"traces": traces, "answers": []}, "r.html")[0]
    assert first == "6 runs (6 with a caveat: 6 with injected noise); the report: r.html"
    assert "loaded" not in first
