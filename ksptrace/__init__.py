"""ksptrace: per-iteration, per-rank timing traces of PETSc Krylov solvers, and their analysis."""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``ksptrace.record`` loads petsc4py and mpi4py only when first used."""
    if name == "record":
        from ksptrace.harness.record import record

        return record
    raise AttributeError(f"module 'ksptrace' has no attribute {name!r}")
