"""The paper's variability analysis: KS between ranks, node variance, distribution fits,
the stationary and non-stationary runtime models, Monte Carlo prediction, and their figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ksptrace.studies.public import lazy

if TYPE_CHECKING:
    from ksptrace.studies.variability.answers import (
        answer_all,
        caveats,
        fastest_ranking,
        fastest_summary,
    )
    from ksptrace.studies.variability.apriori import apriori_table
    from ksptrace.studies.variability.batch import entry_name as cache_entry_name
    from ksptrace.studies.variability.batch import prune as prune_cache
    from ksptrace.studies.variability.fastest import group_text
    from ksptrace.studies.variability.findings import (
        headline,
        ks_alpha_note,
        n_of,
        problem_of,
        sentences,
    )
    from ksptrace.studies.variability.heldout import heldout_table
    from ksptrace.studies.variability.options import AnalysisOptions
    from ksptrace.studies.variability.overview import failure_rows, run_rows, units_line
    from ksptrace.studies.variability.pipeline import TraceAnalysis
    from ksptrace.studies.variability.runs import (
        Reporter,
        Results,
        Skipped,
        analyse,
        analyse_files,
        config_key,
    )
    from ksptrace.studies.variability.sections import (
        SECTIONS,
        anchors,
        finding_row,
        image,
        run_section,
    )
    from ksptrace.studies.variability.tables import (
        fit_mapping,
        fits_table,
        model_table,
        prediction_table,
        scaling_table,
        variability_table,
    )

PUBLIC: dict[str, tuple[str, str]] = {
    "answer_all": ("answers", "answer_all"),
    "caveats": ("answers", "caveats"),
    "fastest_ranking": ("answers", "fastest_ranking"),
    "fastest_summary": ("answers", "fastest_summary"),
    "group_text": ("fastest", "group_text"),
    "failure_rows": ("overview", "failure_rows"),
    "run_rows": ("overview", "run_rows"),
    "units_line": ("overview", "units_line"),
    "analyse": ("runs", "analyse"),
    "analyse_files": ("runs", "analyse_files"),
    "AnalysisOptions": ("options", "AnalysisOptions"),
    "anchors": ("sections", "anchors"),
    "apriori_table": ("apriori", "apriori_table"),
    "cache_entry_name": ("batch", "entry_name"),
    "config_key": ("runs", "config_key"),
    "finding_row": ("sections", "finding_row"),
    "image": ("sections", "image"),
    "ks_alpha_note": ("findings", "ks_alpha_note"),
    "headline": ("findings", "headline"),
    "heldout_table": ("heldout", "heldout_table"),
    "n_of": ("findings", "n_of"),
    "problem_of": ("findings", "problem_of"),
    "fit_mapping": ("tables", "fit_mapping"),
    "fits_table": ("tables", "fits_table"),
    "model_table": ("tables", "model_table"),
    "prediction_table": ("tables", "prediction_table"),
    "prune_cache": ("batch", "prune"),
    "Reporter": ("runs", "Reporter"),
    "Results": ("runs", "Results"),
    "run_section": ("sections", "run_section"),
    "scaling_table": ("tables", "scaling_table"),
    "SECTIONS": ("sections", "SECTIONS"),
    "sentences": ("findings", "sentences"),
    "Skipped": ("runs", "Skipped"),
    "TraceAnalysis": ("pipeline", "TraceAnalysis"),
    "variability_table": ("tables", "variability_table"),
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
