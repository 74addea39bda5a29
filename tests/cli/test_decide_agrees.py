"""``ksptrace decide`` answers "which solver is fastest where" as the report does (issue 52: one
answer per question): the same runs (a machine-loaded one left out) by the same rule, in the
same sentence on its page, on the terminal, in the report's decision page and in Q4."""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.studies.decisions.entry import study as decision_study
from ksptrace.studies.variability.conclusions.answers import answer_all, fastest_ranking
from ksptrace.studies.variability.conclusions.ranked import of_trace
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.trace.read import iter_traces, read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.cli.test_decide import write_campaign

FAST = AnalysisOptions(candidates=("johnsonsu", "norm"), fit_size=2000, mc_runs=2)


def _loaded(folder: Path) -> Path:
    """A bcgs run far faster than any other at P = 4, n = 1000, on a loaded machine: ranked,
    it would win its cell (and the ranking would count one run more)."""
    t = synthetic_trace(4, 30, 4, "bcgs", n=1000, seed=99, base_seconds=1e-6)
    path = folder / "traces" / "bcgs-P4-n1000-loaded.h5"
    write_trace(dataclasses.replace(t, attrs={**t.attrs, "foreign_cpu_share": 0.85}), path)
    return path


def test_decide_and_the_report_give_one_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [*write_campaign(tmp_path / "camp"), _loaded(tmp_path / "camp")]
    out = tmp_path / "decide"
    assert main(["decide", str(tmp_path / "camp"), "--out", str(out), "--quiet"]) == 0
    terminal = capsys.readouterr().out
    page = html.unescape((out / "decision.html").read_text())

    analyses = [analyze_trace(t, FAST) for t in iter_traces(paths)]
    ranking = fastest_ranking(analyses)
    assert "27 clean runs; 1 flagged run left out" in ranking.clause
    report = decision_study(analyses, FAST, with_figures=False)
    (part,) = report.parts
    said = part.findings[0]
    assert said.startswith(ranking.sentence(unit="measured cells").removesuffix("."))
    assert said in page
    assert f"  {said}\n" in terminal
    q4 = next(a for a in answer_all(analyses) if a.key == "fastest")
    assert q4.sentences[0] == ranking.sentence()
    # the map rests on the same runs: the loaded run's cell is won by its clean rivals
    assert "28 runs" not in terminal
    assert "27 runs; 1 run left out" in terminal


def test_a_trace_read_alone_is_ranked_as_its_analysis() -> None:
    """The ranking's view of a trace read without an analysis (decide) equals that of its
    analysis (the report): configuration, solver, the iterations' time, label and caveats."""
    from ksptrace.studies.variability.conclusions.answers import caveats
    from ksptrace.studies.variability.conclusions.fastest import entries

    base = synthetic_trace(2, 30, 2, "gmres", n=1000, seed=3)
    variants = [base,
                dataclasses.replace(base, attrs={**base.attrs, "foreign_cpu_share": 0.5}),
                dataclasses.replace(base, attrs={**base.attrs, "event_log": "all"}),
                dataclasses.replace(base, attrs={**base.attrs, "oversubscribed": "true"}),
                dataclasses.replace(base, attrs={**base.attrs, "setup_max": 1e-4})]
    seen = set()
    for t in variants:
        a = analyze_trace(t, FAST)
        ranked = of_trace(t)
        assert ranked.caveats == caveats(a)
        assert ranked.entry == entries([a])[0]
        seen.add(ranked.caveats)
    assert len(seen) == 4  # clean, loaded, log on, oversubscribed (set-up is no caveat)


def test_read_back_traces_rank_as_written(tmp_path: Path) -> None:
    path = write_trace(synthetic_trace(2, 30, 2, "cg", n=1000, seed=4), tmp_path / "t.h5")
    assert of_trace(read_trace(path)).entry.label == str(path)


def test_when_the_clean_runs_cover_no_map_both_draw_it_from_every_run_and_say_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every run but gmres's flagged loaded: the clean runs hold one solver and make no map.
    decide then draws the map from every run (it refused with exit 6 before: the README's
    demo on a busy machine), the report's decision page does the same, and both say why."""
    paths = write_campaign(tmp_path / "camp")
    for path in paths:
        if "gmres" not in path.name:
            t = read_trace(path)
            path.unlink()
            write_trace(dataclasses.replace(t, attrs={**t.attrs, "foreign_cpu_share": 0.85}),
                        path)
    out = tmp_path / "decide"
    assert main(["decide", str(tmp_path / "camp"), "--out", str(out), "--quiet"]) == 0
    terminal = capsys.readouterr().out
    page = html.unescape((out / "decision.html").read_text())
    clause = "all 27 runs, 9 of them clean (18 machine-loaded; the clean runs alone cover no map"
    assert clause in page
    assert clause in terminal
    assert "3 x 3 cells, 3 methods" in terminal

    analyses = [analyze_trace(t, FAST) for t in iter_traces(paths)]
    assert "9 clean runs; 18 flagged runs left out" in fastest_ranking(analyses).clause
    (part,) = decision_study(analyses, FAST, with_figures=False).parts
    assert clause in part.findings[0]
    assert part.findings[0] in page
