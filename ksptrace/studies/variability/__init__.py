"""The paper's variability analysis: KS between ranks, node variance, distribution fits,
the stationary and non-stationary runtime models, Monte Carlo prediction, and their figures.

In four layers, each importing only those below it (pyproject.toml's
``variability-layers`` contract): :mod:`.pages` (tables, figures, the pages, the study
over a set of runs), :mod:`.conclusions` (findings and the report's answers), :mod:`.run`
(the analysis of one trace and its cache) and :mod:`.stats` (pure statistics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ksptrace.studies.public import lazy

if TYPE_CHECKING:
    from ksptrace.studies.variability.conclusions.answers import (
        answer_all,
        caveats,
        fastest_ranking,
        fastest_summary,
    )
    from ksptrace.studies.variability.conclusions.fastest import group_text
    from ksptrace.studies.variability.conclusions.findings import (
        headline,
        ks_alpha_note,
        n_of,
        problem_of,
        sentences,
    )
    from ksptrace.studies.variability.conclusions.heldout_skill import heldout_table
    from ksptrace.studies.variability.pages.apriori import apriori_table
    from ksptrace.studies.variability.pages.overview import failure_rows, run_rows, units_line
    from ksptrace.studies.variability.pages.runs import (
        Reporter,
        Results,
        Skipped,
        analyse,
        analyse_files,
        config_key,
    )
    from ksptrace.studies.variability.pages.sections import (
        SECTIONS,
        anchors,
        finding_row,
        image,
        run_section,
    )
    from ksptrace.studies.variability.pages.tables import (
        fit_mapping,
        fits_table,
        model_table,
        prediction_table,
        scaling_table,
        variability_table,
    )
    from ksptrace.studies.variability.run.batch import entry_name as cache_entry_name
    from ksptrace.studies.variability.run.batch import prune as prune_cache
    from ksptrace.studies.variability.run.options import AnalysisOptions
    from ksptrace.studies.variability.run.pipeline import TraceAnalysis

PUBLIC: dict[str, tuple[str, str]] = {
    "answer_all": ("conclusions.answers", "answer_all"),
    "caveats": ("conclusions.answers", "caveats"),
    "fastest_ranking": ("conclusions.answers", "fastest_ranking"),
    "fastest_summary": ("conclusions.answers", "fastest_summary"),
    "group_text": ("conclusions.fastest", "group_text"),
    "failure_rows": ("pages.overview", "failure_rows"),
    "run_rows": ("pages.overview", "run_rows"),
    "units_line": ("pages.overview", "units_line"),
    "analyse": ("pages.runs", "analyse"),
    "analyse_files": ("pages.runs", "analyse_files"),
    "AnalysisOptions": ("run.options", "AnalysisOptions"),
    "anchors": ("pages.sections", "anchors"),
    "apriori_table": ("pages.apriori", "apriori_table"),
    "cache_entry_name": ("run.batch", "entry_name"),
    "config_key": ("pages.runs", "config_key"),
    "finding_row": ("pages.sections", "finding_row"),
    "image": ("pages.sections", "image"),
    "ks_alpha_note": ("conclusions.findings", "ks_alpha_note"),
    "headline": ("conclusions.findings", "headline"),
    "heldout_table": ("conclusions.heldout_skill", "heldout_table"),
    "n_of": ("conclusions.findings", "n_of"),
    "problem_of": ("conclusions.findings", "problem_of"),
    "fit_mapping": ("pages.tables", "fit_mapping"),
    "fits_table": ("pages.tables", "fits_table"),
    "model_table": ("pages.tables", "model_table"),
    "prediction_table": ("pages.tables", "prediction_table"),
    "prune_cache": ("run.batch", "prune"),
    "Reporter": ("pages.runs", "Reporter"),
    "Results": ("pages.runs", "Results"),
    "run_section": ("pages.sections", "run_section"),
    "scaling_table": ("pages.tables", "scaling_table"),
    "SECTIONS": ("pages.sections", "SECTIONS"),
    "sentences": ("conclusions.findings", "sentences"),
    "Skipped": ("pages.runs", "Skipped"),
    "TraceAnalysis": ("run.pipeline", "TraceAnalysis"),
    "variability_table": ("pages.tables", "variability_table"),
}
"""The public surface: what the report may use (an import-linter contract checks it),
name -> (module, name there), imported when first asked for."""

__all__ = [
    "SECTIONS",
    "AnalysisOptions",
    "Reporter",
    "Results",
    "Skipped",
    "TraceAnalysis",
    "analyse",
    "analyse_files",
    "anchors",
    "answer_all",
    "apriori_table",
    "cache_entry_name",
    "caveats",
    "config_key",
    "failure_rows",
    "fastest_ranking",
    "fastest_summary",
    "finding_row",
    "fit_mapping",
    "fits_table",
    "group_text",
    "headline",
    "heldout_table",
    "image",
    "ks_alpha_note",
    "model_table",
    "n_of",
    "prediction_table",
    "problem_of",
    "prune_cache",
    "run_rows",
    "run_section",
    "scaling_table",
    "sentences",
    "units_line",
    "variability_table",
]
__getattr__ = lazy(__name__, PUBLIC)
