"""Collectives: the survey's cost models fitted to benchmark traces, reduction counts of solvers,
and the collectives report."""

from ksptrace.studies.collectives.reduction_files import reductions_of_files
from ksptrace.studies.collectives.render import figures as report_figures
from ksptrace.studies.collectives.render import markdown as report_markdown
from ksptrace.studies.collectives.report import CollectivesReport
from ksptrace.studies.collectives.report import build as build_report

__all__ = ["CollectivesReport", "build_report", "reductions_of_files", "report_figures",
           "report_markdown"]
"""The public surface: what the report may use (an import-linter contract checks it)."""
