"""Collectives: the survey's cost models fitted to benchmark traces, reduction counts of solvers,
and the collectives report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ksptrace.studies.public import lazy

if TYPE_CHECKING:
    from ksptrace.studies.collectives.reduction_files import reductions_of_files
    from ksptrace.studies.collectives.render import figures as report_figures
    from ksptrace.studies.collectives.render import markdown as report_markdown
    from ksptrace.studies.collectives.report import CollectivesReport
    from ksptrace.studies.collectives.report import build as build_report
    from ksptrace.studies.collectives.share_answer import QUESTION as SHARE_QUESTION
    from ksptrace.studies.collectives.share_answer import share_sentences

PUBLIC: dict[str, tuple[str, str]] = {
    "build_report": ("report", "build"),
    "CollectivesReport": ("report", "CollectivesReport"),
    "reductions_of_files": ("reduction_files", "reductions_of_files"),
    "report_figures": ("render", "figures"),
    "report_markdown": ("render", "markdown"),
    "SHARE_QUESTION": ("share_answer", "QUESTION"),
    "share_sentences": ("share_answer", "share_sentences"),
}
"""The public surface: what the report may use (an import-linter contract checks it),
name -> (module, name there), imported when first asked for."""

__all__ = ["SHARE_QUESTION", "CollectivesReport", "build_report", "reductions_of_files",
           "report_figures", "report_markdown", "share_sentences"]
__getattr__ = lazy(__name__, PUBLIC)
