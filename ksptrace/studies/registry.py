"""The studies the analysis report runs over its analysed runs, by name.

Each entry names a function ``(analyses, options, with_figures) -> StudyResult | None`` as
``module:function``, the way entry points name theirs: the registry imports no study until the
report asks for it. Adding a study is a package with such a function and one line here; the
report, ``ksptrace analyze`` and the templates stay as they are.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol

from ksptrace.studies.result import StudyResult
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis

STUDIES: dict[str, str] = {
    "variability": "ksptrace.studies.variability.pages.entry:study",
    "noise": "ksptrace.studies.noise.entry:study",
    "decisions": "ksptrace.studies.decisions.entry:study",
}
"""Studies over the analysed runs, in the report's order (the variability study first: it
answers the report's questions, and every other study reads its per-run results)."""


class RunsStudy(Protocol):
    def __call__(self, analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
                 with_figures: bool) -> StudyResult | None: ...


def study(name: str) -> RunsStudy:
    """The entry function of the study called ``name``."""
    modname, _, attr = STUDIES[name].partition(":")
    entry: RunsStudy = getattr(importlib.import_module(modname), attr)
    return entry


def over_runs(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
              with_figures: bool = True) -> list[StudyResult]:
    """Every registered study's result over ``analyses`` (those with something to say)."""
    results = [study(name)(analyses, options, with_figures) for name in STUDIES]
    return [r for r in results if r is not None]
