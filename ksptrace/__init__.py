"""ksptrace: per-iteration, per-rank timing traces of PETSc Krylov solvers, and their analysis."""

from typing import Any

from ksptrace.version import __version__

__all__ = ["__version__", "record"]


def __getattr__(name: str) -> Any:
    """``ksptrace.record`` loads petsc4py and mpi4py only when first used."""
    if name == "record":
        from ksptrace.harness.recording.record import record

        return record
    raise AttributeError(f"module 'ksptrace' has no attribute {name!r}")
