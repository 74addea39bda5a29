"""What ``ksptrace.record`` is given, checked and read: the KSP of a solver, the communicator
the trace is written on, and the settings PETSc keeps that petsc4py cannot ask for."""

from __future__ import annotations

import shlex
from typing import Any

from mpi4py import MPI
from petsc4py import PETSc

from ksptrace.errors import UsageError
from ksptrace.harness.config.kspsetup import GMRES_FAMILY, PETSC_DEFAULT_RESTART


def as_ksp(solver: Any) -> Any:
    """The KSP of ``solver``: a KSP itself, or the linear solver of a SNES or TS."""
    if isinstance(solver, PETSc.KSP):
        return solver
    if isinstance(solver, PETSc.SNES | PETSc.TS):
        return solver.getKSP()
    raise UsageError(f"ksptrace.record needs a PETSc KSP, SNES or TS, got a "
                     f"{type(solver).__name__}; pass the solver whose linear solves to trace")


def restart_of(ksp: Any) -> int:
    """The restart length of a GMRES-type KSP (petsc4py 3.18 cannot ask it), 0 for others."""
    if ksp.getType() not in GMRES_FAMILY:
        return 0
    prefix = ksp.getOptionsPrefix() or ""
    return int(PETSc.Options().getInt(f"{prefix}ksp_gmres_restart", PETSC_DEFAULT_RESTART))


def options_line() -> str:
    """PETSc's options database as a command line (what the program ran with)."""
    words: list[str] = []
    for name, value in sorted(PETSc.Options().getAll().items()):
        words += [f"-{name}", str(value)] if value not in (None, "") else [f"-{name}"]
    return shlex.join(words)


def as_mpi(comm: Any, ksp: Any) -> Any:
    """The mpi4py communicator the trace is written on; UsageError without one on > 1 rank."""
    size = ksp.getComm().getSize()
    if comm is None:
        if size > 1:
            raise UsageError(
                f"ksptrace.record on {size} ranks needs comm=: pass the communicator the KSP "
                "lives on, e.g. ksptrace.record(ksp, path, comm=MPI.COMM_WORLD)")
        return MPI.COMM_SELF
    mpicomm = comm.tompi4py() if hasattr(comm, "tompi4py") else comm
    if mpicomm.Get_size() != size:
        raise UsageError(f"comm has {mpicomm.Get_size()} ranks but the KSP lives on {size}; "
                         "pass the KSP's communicator (ksp.getComm())")
    return mpicomm
