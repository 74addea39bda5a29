"""The decisions study over analysed runs: which method is fastest where over P × n, as exact
and compact quadtrees (a :class:`StudyResult`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ksptrace.errors import KsptraceError
from ksptrace.studies.decisions.files import options_refused
from ksptrace.studies.decisions.grouping import (
    DEFAULT_AXES,
    DEFAULT_METHOD,
    Run,
    Studies,
    build_studies,
    run_of,
)
from ksptrace.studies.decisions.study import DecisionStudy
from ksptrace.studies.decisions.tables import sentences, study_tables, summary_of
from ksptrace.studies.result import Figure, Part, StudyResult
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.answers import fastest_ranking
from ksptrace.studies.variability.conclusions.ranked import RankedRun, ranking_of
from ksptrace.studies.variability.conclusions.ranking import Ranking, Verdict
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis

SHOWN_TABLES = 6
"""Tables of a map shown on the page; the rest (the cells) is written as CSV only."""


def studies_of(analyses: Sequence[TraceAnalysis], ranking: Ranking | None = None) -> Studies:
    """Decision maps over P x n of the runs the report's ranking rests on (``ranking``: all of
    ``analyses``); none unless several solvers were run at two or more values of both."""
    if ranking is not None:
        rested = set(ranking.labels)
        analyses = [a for a in analyses if (a.path or a.label) in rested]
    runs = [run_of(dict(a.attrs), a.nprocs, a.measured, a.path or a.label) for a in analyses]
    try:
        return build_studies(runs)
    except KsptraceError as exc:
        return Studies(DEFAULT_AXES, DEFAULT_METHOD, (), (str(exc),))


def decide_ranking(ranked: Sequence[RankedRun], axes: Sequence[str], method: str,
                   every: bool = False) -> Ranking | None:
    """The report's fastest-solver ranking of the runs ``ksptrace decide`` read, when its maps
    ask the report's question (the solver over P × n): the same runs by the same rule, so the
    page answers as the report does. None for any other question (another method or axes)."""
    if not ranked or tuple(axes) != DEFAULT_AXES or method != DEFAULT_METHOD:
        return None
    return ranking_of(ranked, every)


def ranked_runs(runs: Sequence[Run], ranked: Sequence[RankedRun],
                ranking: Ranking | None) -> list[Run]:
    """``runs`` without those the ranking left out (flagged runs beside clean ones); runs it
    never saw (collectives) stay."""
    if ranking is None:
        return list(runs)
    left_out = {r.entry.label for r in ranked} - set(ranking.labels)
    return [r for r in runs if r.path not in left_out]


def _drawn(s: DecisionStudy) -> list[Figure]:
    from ksptrace.studies.decisions.figures import study_figures  # matplotlib: only to draw

    return list(study_figures(s))


def _left_out(s: DecisionStudy) -> list[str]:
    from ksptrace.studies.decisions.figures import left_out

    return list(left_out(s))


def _in_map(settings: dict[str, Any]) -> Callable[[Verdict], bool]:
    """Whether a ranking's configuration is a cell of the map whose runs share ``settings``."""
    wanted = {k: str(settings.get(k, "none" if k == "noise" else None))
              for k in ("problem", "pc", "iterations", "noise")}
    return lambda v: all(v.value(k) == want for k, want in wanted.items())


def result_of(studies: Studies, tables_of: Sequence[Sequence[Table]] | None = None,
              pictures_of: Sequence[Sequence[Figure]] | None = None,
              ranking: Ranking | None = None) -> StudyResult:
    """The maps as a study result (``tables_of`` and ``pictures_of`` per map: computed here
    when not given; pass empty lists to leave the figures out). With the report's ``ranking``,
    a map's first sentence is the ranking's over its cells: the answer Q4 and the terminal
    table give, from the same runs by the same rule."""
    parts = []
    for k, s in enumerate(studies.studies):
        tables = list(tables_of[k]) if tables_of is not None else study_tables(s, k)
        pictures = pictures_of[k] if pictures_of is not None else _drawn(s)
        said = sentences(s)
        if ranking is not None and k < len(studies.settings):
            said[0] = (ranking.sentence(_in_map(studies.settings[k]), "measured cells")
                       + " The map colours each cell by its lowest median.")
        parts.append(Part(
            title=s.title, anchor=f"decision-{k + 1}",
            findings=(*said, *(_left_out(s) if pictures else ())),
            tables=tuple(tables[:SHOWN_TABLES]), unshown=tuple(tables[SHOWN_TABLES:]),
            figures=tuple(pictures)))
    a1, a2 = studies.axes
    return StudyResult(
        key="decision", title=f"Decision maps: which {studies.method} where",
        lead=f"The fastest {studies.method} per cell of {a1} × {a2} (median KSPSolve over "
             "repetitions), encoded as quadtrees after Pjesivac-Grbovic, Fagg and Dongarra: "
             "how much a compact decision function gives away against the exact map.",
        parts=tuple(parts),
        short=(f"The fastest {studies.method} per cell of {a1} × {a2}, and what a compact "
               "decision tree gives away against it: on its page.") if parts else "",
        notes=(*studies.notes, *(n for s in studies.studies
                                 for n in options_refused(s, studies.method))) if parts else (),
        footer="Decision functions (C, Python), PETSc options files per region and a "
               "follow-up campaign: ksptrace decide.",
        summary={"decision_maps": [summary_of(s) for s in studies.studies]})


def study(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
          with_figures: bool = True) -> StudyResult:
    """The maps of ``analyses``; with no map, a result with no parts (nothing is shown)."""
    ranking = fastest_ranking(analyses)
    studies = studies_of(analyses, ranking)
    if not studies.studies and len(ranking.labels) < len(analyses):
        # the clean runs alone cover no map: all runs, their caveats named (as decide does)
        wider = fastest_ranking(analyses, every=True)
        if (more := studies_of(analyses, wider)).studies:
            ranking, studies = wider, more
    pictures: list[list[Figure]] | None = (
        None if with_figures else [[] for _ in studies.studies])
    return result_of(studies, None, pictures, ranking)
