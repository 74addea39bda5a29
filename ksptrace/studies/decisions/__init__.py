"""Decision maps over (P, message size): exact quadtrees, CART comparison, generated C and Python,
Open MPI rules files, where to measure next, and their report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ksptrace.studies.public import lazy

if TYPE_CHECKING:
    from ksptrace.studies.decisions.entry import decide_ranking, ranked_runs, result_of
    from ksptrace.studies.decisions.figures import study_figures
    from ksptrace.studies.decisions.files import write_files
    from ksptrace.studies.decisions.grouping import Run, Studies, build_studies
    from ksptrace.studies.decisions.rules import ompi_rules
    from ksptrace.studies.decisions.tables import study_tables

PUBLIC: dict[str, tuple[str, str]] = {
    "build_studies": ("grouping", "build_studies"),
    "decide_ranking": ("entry", "decide_ranking"),
    "ranked_runs": ("entry", "ranked_runs"),
    "ompi_rules": ("rules", "ompi_rules"),
    "result_of": ("entry", "result_of"),
    "Run": ("grouping", "Run"),
    "Studies": ("grouping", "Studies"),
    "study_figures": ("figures", "study_figures"),
    "study_tables": ("tables", "study_tables"),
    "write_files": ("files", "write_files"),
}
"""The public surface: what the report may use (an import-linter contract checks it),
name -> (module, name there), imported when first asked for."""

__all__ = ["Run", "Studies", "build_studies", "decide_ranking", "ompi_rules", "ranked_runs",
    "result_of", "study_figures", "study_tables", "write_files"]
__getattr__ = lazy(__name__, PUBLIC)
