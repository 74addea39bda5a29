"""The collectives page: the collectives study's tables, notes and figures as one HTML file,
its CSVs, a Markdown table and Open MPI rules files, written whole or not at all."""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ksptrace.errors import AnalysisError, TraceError
from ksptrace.outputs import staged_directory
from ksptrace.report.templating import ENV
from ksptrace.studies.collectives import (
    SHARE_QUESTION,
    CollectivesReport,
    build_report,
    reductions_of_files,
    report_figures,
    report_markdown,
    share_sentences,
)
from ksptrace.trace import collectives


@dataclass(frozen=True)
class Written:
    """What :func:`write_collectives` wrote, and the traces it left out with why."""

    html: Path
    count: int
    skipped: tuple[str, ...]


def write_collectives(out: Path, paths: Sequence[str | os.PathLike[str]], with_figures: bool,
                      solver_paths: Sequence[str | os.PathLike[str]] = ()) -> Written:
    """The collectives page, its CSVs, Markdown and rules files in ``out``; beside solver
    traces, also the share of their iterations their reductions explain. A trace that cannot
    be read is skipped and named (AnalysisError when none can)."""
    traces, skipped = [], []
    for p in paths:
        try:
            traces.append(collectives.read(p))
        except TraceError as exc:
            skipped.append(str(exc))
    if not traces:
        raise AnalysisError("no collectives trace could be read (" + "; ".join(skipped)
                            + "); pass valid collectives traces")
    report = build_report(traces)
    if solver_paths:
        table = reductions_of_files(solver_paths, traces)
        report = dataclasses.replace(report, tables=(*report.tables, table))
    if skipped:
        report = dataclasses.replace(
            report, notes=(*report.notes, *(f"skipped {s}" for s in skipped)))
    curves = next((t.frame for t in report.tables if t.name == "collectives_curves"), None)
    pictures = report_figures(curves) if with_figures and curves is not None else []
    with staged_directory(out, ("collectives.html",)) as tmp:
        for t in report.tables:
            (tmp / f"{t.name}.csv").write_text(t.to_csv())
        (tmp / "collectives.md").write_text(report_markdown(report))
        for op, text in report.rules:
            (tmp / f"ompi_rules_{op}.conf").write_text(text)
        page = html(report, len(traces), pictures, "../report.html" if solver_paths else None)
        (tmp / "collectives.html").write_text(page, encoding="utf-8")
    return Written(out / "collectives.html", len(traces), tuple(skipped))


def share_answer(paths: Sequence[str | os.PathLike[str]],
                 solver_paths: Sequence[str | os.PathLike[str]]) -> dict[str, object] | None:
    """The main page's answer on collectives (None without a readable collectives trace)."""
    traces = []
    for p in paths:
        try:
            traces.append(collectives.read(p))
        except TraceError:
            continue
    if not traces or not solver_paths:
        return None
    table = reductions_of_files(solver_paths, traces)
    return {"key": "collectives", "question": SHARE_QUESTION,
            "sentences": share_sentences(table), "short": ""}


def html(report: CollectivesReport, count: int, pictures: list[tuple[str, bytes]],
         home: str | None = None) -> str:
    """The page for ``count`` traces, with ``pictures`` as (title, PNG bytes); ``home``: the
    solver report it sits beside (a link back), if any."""
    figs = [{"title": t, "src": "data:image/png;base64," + base64.b64encode(b).decode()}
            for t, b in pictures]
    tabs = [{"title": t.title, "empty": t.empty, "html": t.to_html(), "notes": t.notes,
             "csv": f"{t.name}.csv"} for t in report.tables]
    return ENV.get_template("collectives.html.j2").render(
        count=count, notes=report.notes, figures=figs, tables=tabs, home=home)
