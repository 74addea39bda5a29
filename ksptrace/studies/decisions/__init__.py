"""Decision maps over (P, message size): exact quadtrees, CART comparison, generated C and Python,
Open MPI rules files, where to measure next, and their report."""

from ksptrace.studies.decisions.entry import result_of
from ksptrace.studies.decisions.figures import study_figures
from ksptrace.studies.decisions.files import write_files
from ksptrace.studies.decisions.grouping import Run, Studies, build_studies
from ksptrace.studies.decisions.rules import ompi_rules
from ksptrace.studies.decisions.tables import study_tables

__all__ = ["Run", "Studies", "build_studies", "ompi_rules", "result_of", "study_figures",
           "study_tables", "write_files"]
"""The public surface: what the report may use (an import-linter contract checks it)."""
