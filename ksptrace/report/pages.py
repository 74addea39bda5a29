"""The report as a small site: a main page that answers the study's questions, one page per run
(``runs/<run>.html``) and one per study (``studies/<key>.html``), every figure a PNG file beside
its page. With ``single_file`` everything is one page with its figures inline (base64), as
before. Pure: results in, a :class:`Site` (page and file contents by relative path) out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ksptrace.report import studies as study_view
from ksptrace.report.answers import merged
from ksptrace.report.templating import ENV
from ksptrace.studies.result import ACROSS
from ksptrace.studies.variability import (
    Results,
    anchors,
    failure_rows,
    image,
    ks_alpha_note,
    run_rows,
    run_section,
    units_line,
)

MAIN = "report.html"
STUDY_QUESTIONS = {
    "decision": ("Which solver where, as a decision map?",
                  "the map of the fastest solver over P × n, its quadtree encoding and the "
                  "penalty of each depth"),
    "noise": ("What does the injected noise cost?",
              "each noisy run beside its noise-free twin: the gap, the KS tests and the cost "
              "of the detours"),
}
"""The question each study answers on the main page, and what its own page holds."""


@dataclass(frozen=True)
class Site:
    """Every page (HTML text) and figure (PNG bytes) of a report, by path relative to it."""

    pages: Mapping[str, str]
    files: Mapping[str, bytes]


def _externalise(node: Any, folder: str, stem: str, files: dict[str, bytes], inline: bool,
                 depth: str = "") -> None:
    """Give every figure of ``node`` (a dict holding "png") a file ``folder/stem-i.png`` and
    point its ``src`` at it (seen from a page ``depth`` deep); ``inline`` keeps the data URI."""
    if isinstance(node, list):
        for item in node:
            _externalise(item, folder, stem, files, inline, depth)
        return
    if not isinstance(node, dict):
        return
    png = node.pop("png", None)
    if isinstance(png, bytes) and not inline:
        name = f"{folder}/{stem}-{sum(f.startswith(f'{folder}/{stem}-') for f in files) + 1}.png"
        files[name] = png
        node["src"] = depth + name.split("/", 1)[1] if depth else name
    for value in node.values():
        if isinstance(value, list | dict):
            _externalise(value, folder, stem, files, inline, depth)


def _studies(results: Results, single: bool, files: dict[str, bytes]
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The main page's study answers and every study's own page context."""
    answers, sections = [], []
    for r in results.studies:
        if not study_view.shown(r):
            continue
        question, what = STUDY_QUESTIONS.get(r.key, (r.title, "its tables and figures"))
        ctx = study_view.context(r)
        _externalise(ctx, "studies", r.key, files, single, depth="")
        href = f"#{r.key}" if single else f"studies/{r.key}.html"
        answers.append({"key": r.key, "question": question, "title": r.title, "what": what,
                        "findings": list(r.findings)[:3], "lead": r.lead, "href": href,
                        "short": r.short})
        sections.append(ctx)
    return answers, sections


def _placed(results: Results, place: str) -> list[dict[str, Any]]:
    """The tables of every study's parts placed at ``place`` (an answer's key, or ACROSS)."""
    return [study_view.placed_table(t) for r in results.studies for p in r.placed(place)
            for t in p.tables]


def render_site(results: Results, metadata: dict[str, Any],
                links: Sequence[tuple[str, str]] = (), single_file: bool = False,
                extra: Sequence[dict[str, Any]] = ()) -> Site:
    """The report's pages and figure files: the studies' answers with the tables placed under
    them, the runs' pages, the page across configurations (the runs' figures across them and
    the parts placed there) and a page per study; ``extra``: other answers (key, question,
    sentences), shown after the studies'."""
    rows = anchors(results.analysed)
    analyses = [d.analysis for d in results.analysed]
    files: dict[str, bytes] = {}

    def href(anchor: str) -> str:
        return f"#{anchor}" if single_file else f"runs/{anchor}.html"

    sections = []
    for d, f in zip(results.analysed, rows, strict=True):
        section = run_section(d, f, results.options)
        _externalise(section, "runs", f.anchor, files, single_file, depth="" if single_file
                     else "./")
        sections.append(section)
    figures = [image(p) for p in results.across]
    _externalise(figures, "figures", "across", files, single_file)
    across_tables = _placed(results, ACROSS)
    across: dict[str, Any] | None = None
    if figures or any(not t["empty"] for t in across_tables):
        what = " and ".join(p.title for r in results.studies for p in r.placed(ACROSS)
                            if p.title)
        across = {"href": "#across" if single_file else "across.html", "figures": figures,
                  "tables": across_tables, "omitted": results.across_omitted,
                  "what": f"{len(figures)} figure{'s' if len(figures) != 1 else ''}"
                          + (f" and {what}" if what else "")}
    study_answers, study_sections = _studies(results, single_file, files)
    if not single_file:
        for ctx in study_sections:  # figures of a study page sit beside it in studies/
            for part in ctx["parts"]:
                for fig in part["figures"]:
                    fig["src"] = fig["src"].removeprefix("studies/")
    answers = [{"short": "", **a, "tables": _placed(results, a["key"])}
               for a in [*merged(results.studies), *extra]]
    common = {"metadata": metadata, "standalone": True}
    pages = {MAIN: ENV.get_template("report.html.j2").render(
        **common, home=None, answers=answers,
        units=units_line(analyses, results.options.independent),
        studies=study_answers,
        runs=run_rows(rows, analyses, href), failures=failure_rows(rows, analyses, href),
        across=across,
        skipped=results.skipped, links=list(links),
        ks_note=ks_alpha_note(results.options.alpha, results.options.reference_rank),
        single=single_file, sections=sections, study_sections=study_sections)}
    if not single_file:
        for s in sections:
            pages[f"runs/{s['anchor']}.html"] = ENV.get_template("run.html.j2").render(
                **common, s=s, home=f"../{MAIN}")
        if across is not None:
            pages["across.html"] = ENV.get_template("across.html.j2").render(
                **common, across=across, home=MAIN)
        for ctx in study_sections:
            pages[f"studies/{ctx['key']}.html"] = ENV.get_template("study.html.j2").render(
                **common, study=ctx, home=f"../{MAIN}")
    return Site(pages, files)
