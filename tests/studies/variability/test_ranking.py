"""One answer to "which solver is fastest where" (issue 52): Q4, summary.json, the terminal
table's marks and the decision page come from one ranking, by one rule, from the same runs."""

from __future__ import annotations

import dataclasses
import functools
import re
from types import SimpleNamespace

from ksptrace.report.terminal import table_lines
from ksptrace.studies.decisions.entry import study as decision_study
from ksptrace.studies.variability.conclusions import answers
from ksptrace.studies.variability.conclusions.ranking import Entry, anomalies, rank
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.trace.synthetic import synthetic_trace

LOADED = Flag("machine-loaded", "the machine",
              "other processes used 40 % of the node's CPUs during the solve")


@functools.cache
def _base() -> TraceAnalysis:
    return analyze_trace(synthetic_trace(2, 60, 2, "gmres", seed=1),
                         AnalysisOptions(candidates=("norm",), mc_runs=2))


def _run(ksp: str, n: int, p: int, seconds: float, loaded: bool = False,
         rep: int = 0) -> TraceAnalysis:
    """A run that differs from the one analysed trace in its settings and KSPSolve only."""
    a = _base()
    attrs = {**dict(a.attrs), "problem": "lap", "n": n, "ksp": ksp, "nprocs": p, "pc": "jacobi",
             "iterations": 60}
    return dataclasses.replace(
        a, ksp=ksp, nprocs=p, measured=seconds, attrs=tuple(sorted(attrs.items())),
        label=f"{ksp}-{n}-{p}-{rep}", path=f"/runs/{ksp}-{n}-{p}-{rep}.h5",
        flags=(LOADED,) if loaded else ())


def _entries(times: dict[str, list[float]]) -> list[Entry]:
    return [Entry((("problem", "lap"),), s, t) for s, ts in times.items() for t in ts]


def test_repetitions_must_be_apart_and_single_runs_more_than_the_margin() -> None:
    apart = rank(_entries({"A": [1.0, 1.1], "B": [1.2, 1.3]}), "x").verdicts[0]
    assert (apart.kind, apart.winner) == ("fastest", "A")
    overlap = rank(_entries({"A": [1.0, 1.25], "B": [1.2, 1.3]}), "x").verdicts[0]
    assert (overlap.kind, overlap.winner, overlap.tied) == ("cannot tell", None, ("A", "B"))
    assert overlap.text() == "cannot tell between A and B"
    close = rank(_entries({"A": [1.0], "B": [1.04], "C": [2.0]}), "x").verdicts[0]
    assert close.tied == ("A", "B")  # C is told apart, B is not
    far = rank(_entries({"A": [1.0], "B": [1.06]}), "x").verdicts[0]
    assert far.winner == "A"
    alone = rank(_entries({"A": [1.0]}), "x")
    assert alone.verdicts[0].kind == "one solver"
    assert "none can be ranked" in alone.sentence()


def test_a_loaded_run_never_decides_fastest_silently() -> None:
    """A loaded GMRES run three times faster than clean BCGS: the ranking rests on the clean
    runs and says that one flagged run was left out; with no clean run at all, every verdict
    names the caveat."""
    runs = [_run("gmres", 1000, 1, 1.0), _run("bcgs", 1000, 1, 0.5),
            _run("gmres", 1000, 2, 0.2, loaded=True), _run("bcgs", 1000, 2, 0.6)]
    ranking = answers.fastest_ranking(runs)
    assert ranking.clause == "3 clean runs; 1 flagged run left out"
    p2 = next(v for v in ranking.verdicts if v.value("P") == "2")
    assert p2.kind == "one solver"  # the loaded GMRES does not win P = 2
    assert ranking.sentence().startswith("Of the 1 configuration that ran two or more solvers "
                                         "(3 clean runs; 1 flagged run left out), the fastest")
    every = answers.fastest_ranking([_run("gmres", 1000, 2, 0.2, loaded=True),
                                     _run("bcgs", 1000, 2, 0.6, loaded=True)])
    assert "none clean (2 machine-loaded)" in every.sentence()
    # The terminal marks the loaded cell "!" and gives it no "*" of its own.
    summary = answers.fastest_summary(runs)
    lines = table_lines([_trace(a) for a in runs], 10, summary)
    p2_line = next(ln for ln in lines if ln.startswith("lap") and ln[20:24].strip() == "2")
    assert "200 ms!" in p2_line
    assert "*" not in p2_line


def _trace(a: TraceAnalysis) -> dict[str, object]:
    """What summary.json says of a run, as far as the terminal table reads it."""
    return {"problem": "lap", "n": dict(a.attrs)["n"], "ksp": a.ksp, "nprocs": a.nprocs,
            "kspsolve": a.measured, "caveats": list(answers.caveats(a))}


FIXTURE = {  # (n, P) -> {solver: KSPSolve of each repetition}
    (1000, 1): {"gmres": [1.0, 1.02], "bcgs": [1.5, 1.6]},
    (1000, 2): {"gmres": [0.60, 0.70], "bcgs": [0.65, 0.66]},  # overlap: cannot tell
    (3000, 1): {"gmres": [3.0, 3.1], "bcgs": [2.0, 2.1]},
    (3000, 2): {"gmres": [1.6, 1.7], "bcgs": [1.2, 1.25]},
    (10000, 1): {"gmres": [10.0, 10.5], "bcgs": [7.0, 7.2]},
    (10000, 2): {"gmres": [5.2, 5.4], "bcgs": [40.0, 41.0]},  # bcgs 5.7x slower at P = 2
}


def _fixture() -> list[TraceAnalysis]:
    runs = [_run(s, n, p, t, rep=r) for (n, p), by in FIXTURE.items() for s, ts in by.items()
            for r, t in enumerate(ts)]
    return [*runs, _run("gmres", 10000, 2, 0.01, loaded=True, rep=9)]  # left out everywhere


def test_q4_the_decision_page_summary_and_terminal_agree_on_a_fixture() -> None:
    runs = _fixture()
    q4 = answers.fastest(runs).sentences
    summary = answers.fastest_summary(runs)
    page = decision_study(runs, AnalysisOptions(), with_figures=False)
    first = page.parts[0].findings[0]
    # Q4 and the decision page: the same counts from the same 24 clean runs
    assert q4[0] == ("Of the 6 configurations that ran two or more solvers (24 clean runs; 1 "
                     "flagged run left out), the fastest solver (median KSPSolve, separated "
                     "beyond the run-to-run spread) is BCGS in 3, GMRES in 2; it cannot tell "
                     "in 1.")
    assert first.startswith(q4[0].replace("configurations", "measured cells"))
    assert "lap n = 1\u202f000, P = 2 (GMRES, BCGS)" in q4[1]
    assert "BCGS on lap n = 10⁴, P = 2: 5.7× its time at P = 1" in q4[2]
    # summary.json: the same verdicts
    kinds = {(c["n"], c["nprocs"]): (c["verdict"], c["fastest"], c["cannot_tell"])
             for c in summary["configurations"]}
    assert kinds[(1000, 2)] == ("cannot tell", None, ["GMRES", "BCGS"])
    assert kinds[(10000, 2)] == ("fastest", "GMRES", [])
    won = [c["fastest"] for c in summary["configurations"] if c["fastest"]]
    assert re.findall(r"([A-Z]+) in (\d)", q4[0]) == [
        (s, str(won.count(s))) for s in ("BCGS", "GMRES")]
    # the terminal: one "*" per decided line, "=" on both cells it cannot tell, "^" on BCGS
    lines = table_lines([_trace(a) for a in runs], 20, summary)[1:]
    assert len(lines) == 6
    by_key = {(int(ln[11:20].replace(" ", "")), int(ln[20:24])): ln for ln in lines}
    assert by_key[(1000, 2)].count("=") == 2
    assert "*" not in by_key[(1000, 2)]
    for (n, p), line in by_key.items():
        verdict, _winner, _ = kinds[(n, p)]
        assert line.count("*") == (verdict == "fastest")
    assert "^" in by_key[(10000, 2)]
    # the cell shows the median of its clean repetitions, not the loaded 10 ms run
    assert "5.3 s*" in by_key[(10000, 2)]
    assert "!" not in by_key[(10000, 2)]
    assert [a["ksp"] for a in summary["scaling_anomalies"]] == ["BCGS"]


def test_anomalies_compare_each_p_with_the_next_smaller_one() -> None:
    def e(p: int, t: float) -> Entry:
        return Entry((("problem", "ice"), ("P", str(p))), "GMRES", t)

    found = anomalies([e(1, 0.871), e(2, 4.71), e(4, 4.0), e(8, 7.9)])
    assert [(a.smaller, a.larger, round(a.ratio, 1)) for a in found] == [(1, 2, 5.4)]
    assert dict(found[0].group)["P"] == "2"


def test_runs_with_injected_noise_never_stand_for_a_solver_when_none_is_clean() -> None:
    """A loaded demo beside a paired noise campaign: the ranking rests on the loaded runs
    without injected noise, and says how many noisy runs it left out."""
    noisy = dataclasses.replace(_run("gmres", 1000, 2, 0.1, loaded=True, rep=1),
                                injection=SimpleNamespace(spec=SimpleNamespace(active=True)))
    assert noisy.noisy
    runs = [_run("gmres", 1000, 2, 0.9, loaded=True), _run("bcgs", 1000, 2, 0.6, loaded=True),
            noisy]
    base = answers.basis(runs)
    assert noisy not in base.runs
    assert len(base.runs) == 2
    assert base.clause.startswith("all 2 runs, none clean (2 machine-loaded; 1 with injected "
                                  "noise left out)")
    (verdict,) = answers.fastest_ranking(runs).verdicts
    # the noisy GMRES at 0.1 s does not lead; and two loaded single runs, with no loaded
    # spread measured, name no winner (issue 63)
    assert verdict.winner is None
    assert verdict.text() == "cannot tell (loaded) between BCGS and GMRES"
