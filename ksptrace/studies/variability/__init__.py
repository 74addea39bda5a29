"""The paper's variability analysis: KS between ranks, node variance, distribution fits,
the stationary and non-stationary runtime models, Monte Carlo prediction, and their figures."""

from ksptrace.studies.variability.batch import entry_name as cache_entry_name
from ksptrace.studies.variability.batch import prune as prune_cache
from ksptrace.studies.variability.findings import ks_alpha_note, sentences
from ksptrace.studies.variability.options import AnalysisOptions
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
    apriori_table,
    model_table,
    prediction_table,
    scaling_table,
    variability_table,
)

__all__ = [
    "SECTIONS", "AnalysisOptions", "Reporter", "Results", "Skipped", "TraceAnalysis",
    "analyse", "analyse_files", "anchors", "apriori_table", "cache_entry_name", "config_key",
    "finding_row", "image", "ks_alpha_note", "model_table", "prediction_table", "prune_cache",
    "run_section", "scaling_table", "sentences", "variability_table",
]
"""The public surface: what the report may use (an import-linter contract checks it)."""
