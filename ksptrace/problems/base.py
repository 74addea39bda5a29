"""The contract between a problem and the harness.

A problem module exposes ``build(comm, n, options) -> ProblemInstance``. The instance owns its
assembled PETSc objects. The harness sets code defaults on ``instance.ksp``, then calls
``instance.set_from_options()`` last so that the user's PETSc options win, attaches its monitor,
and calls ``instance.solve()`` (once more after ``reset()`` when a warm-up solve is asked for).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ksptrace.trace.model import AttrValue

if TYPE_CHECKING:
    from petsc4py import PETSc


class ProblemInstance(abc.ABC):
    """An assembled problem, ready to be solved repeatedly from the same initial guess."""

    n_global: int
    """Number of unknowns."""
    nnz: int
    """Stored nonzeros of the (global) operator matrix."""

    solve_is_kspsolve: bool = False
    """True when :meth:`solve` is one call of KSPSolve and nothing else: the harness then
    times it with MPI_Wtime around the call; otherwise (a Newton step, a user's solve) with
    PETSc's KSPSolve event."""

    @property
    @abc.abstractmethod
    def ksp(self) -> PETSc.KSP:
        """The KSP whose iterations are timed."""

    @abc.abstractmethod
    def set_from_options(self) -> None:
        """Apply the PETSc options database to every solver object (called last)."""

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """Set solver objects up before the timed solve, so that KSPSolve times iterations."""

    @abc.abstractmethod
    def solve(self) -> None:
        """The timed solve: one KSPSolve, or one Newton step whose linear solve is ``ksp``."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Restore the initial guess so that the next solve repeats the previous one."""

    def attrs(self) -> dict[str, AttrValue]:
        """Problem-specific trace attributes (grid, case, nonlinear norms), read after solve."""
        return {}

    def solution_error(self) -> float | None:
        """Max-norm distance to the exact solution, when the problem has one."""
        return None

    def destroy(self) -> None:  # noqa: B027 - optional hook
        """Free PETSc objects early (optional)."""


class ProblemBuilder(Protocol):
    def __call__(
        self, comm: PETSc.Comm, n: int, options: Mapping[str, Any]
    ) -> ProblemInstance: ...
