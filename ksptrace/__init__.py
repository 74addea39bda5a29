"""ksptrace: per-iteration, per-rank timing traces of PETSc Krylov solvers, and their analysis."""

__version__ = "0.1.0"
