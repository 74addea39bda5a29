"""The report's first screen answers in a few sentences, detail a click away (issue 63): each
answer's first sentence is shown, the rest (sentences, tables, links) sits in a closed
<details>; the words shown before the table of runs are counted as a browser shows them."""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path

from ksptrace.report.compose import write_report
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.trace.synthetic import synthetic_trace

FIRST_SCREEN_WORDS = 260
"""The issue asks for about 250. Measured when written: 169 words for this campaign (322 when
each answer's first sentence was shown, 1212 with the page template before issue 63); the
demo's campaign (68 traces, the paired noise design beside it): 223 (459 before, counted the
same way)."""


class _Shown(HTMLParser):
    """The words a browser shows before ``<section id="runs">`` with every <details> closed
    (a closed one shows its <summary> only)."""

    def __init__(self) -> None:
        super().__init__()
        self.words: list[str] = []
        self.details = self.summary = self.hidden = 0
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section" and dict(attrs).get("id") == "runs":
            self.done = True
        self.hidden += tag in ("style", "script", "title")
        self.details += tag == "details"
        self.summary += tag == "summary"

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in ("style", "script", "title")
        self.details -= tag == "details"
        self.summary -= tag == "summary"

    def handle_data(self, data: str) -> None:
        inside = self.details and not (self.summary and self.details == 1)
        if not (self.done or self.hidden or inside):
            self.words += data.split()


def test_the_first_screen_shows_each_answers_first_sentence_only(tmp_path: Path) -> None:
    traces = []
    for seed, (p, n, ksp, rep) in enumerate(
            (p, n, ksp, rep) for p in (1, 2, 4) for n in (10_000, 100_000)
            for ksp in ("gmres", "bcgs", "pgmres", "pipebcgs") for rep in (0, 1)):
        t = synthetic_trace(p, 300, p, ksp, n=n, seed=seed + 1,
                            base_seconds=1e-4 * n / 1e4 / p)
        traces.append(dataclasses.replace(t, path=f"/runs/{ksp}-P{p}-n{n}-{rep}.h5"))
    report = write_report(tmp_path / "r", traces,
                          AnalysisOptions(candidates=("norm",), mc_runs=2), with_figures=False)
    page = (report.directory / "report.html").read_text()
    shown = _Shown()
    shown.feed(page)
    text = " ".join(shown.words)
    answers = json.loads(report.summary.read_text())["answers"]
    for a in answers:
        first = a["short"] or a["sentences"][0]
        assert " ".join(first.split()) in text
        for later in a["sentences"] if a["short"] else a["sentences"][1:]:
            assert " ".join(later.split()) not in text  # a click away, not on the first screen
    assert len(shown.words) <= FIRST_SCREEN_WORDS, len(shown.words)
