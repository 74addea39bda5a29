"""PETSc SNES tutorial ex48 (v3.18): hydrostatic (Blatter-Pattyn) ice flow, reimplemented with
petsc4py and numpy. ``build(comm, n, options)`` returns an :class:`IceFlow` instance."""

from ksptrace.problems.iceflow.problem import IceFlow, build

__all__ = ["IceFlow", "build"]
