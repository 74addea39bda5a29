"""PETSc's event log during a timed solve: only the two events ksptrace reads.

PETSc's default log (``PetscLogDefaultBegin``, what ``-log_view`` turns on) times every event of
every iteration: MatMult, each Vec operation, PCApply, the scatters. That costs about 0.9 µs per
iteration (5,770 more instructions per GMRES iteration under callgrind, bench/logcost.py), 10 %
of a solve at 10^3 unknowns per rank. ksptrace needs two events: ``KSPSolve`` (PETSc's count of
the solve's blocking reductions, and its time as a cross-check of the ``MPI_Wtime`` one) and
``VecReduceBegin`` (the split-phase reductions of pipelined methods). With every other event
deactivated, a deactivated event costs PETSc one branch: 253 instructions per iteration in all.

A user who asks for the full log (``-log_view`` and its kin) gets it: the trace then records
``event_log = "all"`` and ``analyze`` flags the run ``log-on``.
"""

from __future__ import annotations

import ctypes
from typing import Any

ONLY = "KSPSolve and VecReduceBegin only"
"""The ``event_log`` attribute of a solve timed with only the events ksptrace reads."""
ALL = "all"
"""The ``event_log`` attribute of a solve timed with PETSc's full log (the user asked)."""
NEEDED = ("KSPSolve", "VecReduceBegin")
FULL_LOG_OPTIONS = ("log_view", "log_all", "log_summary", "log_trace", "log_mpe",
                    "log_perfstubs", "log_view_memory")
"""PETSc options with which the user asks for the full event log."""
SMALLEST_CLASSID = 1211211
"""PETSC_SMALLEST_CLASSID: the first class id PETSc registers (stable since PETSc 3.0)."""
SOLVE_TIME_SOURCE = "MPI_Wtime around KSPSolve on each rank"
REDUCTIONS_SOURCE = ("PETSc's counts in the timed solve: the KSPSolve event's reductions "
                     "(blocking) and VecReduceBegin calls (split-phase)")


_narrowed = False
"""Whether this process's log was begun and narrowed by :func:`keep_only_needed`."""


def narrowed_here() -> bool:
    """Whether ksptrace itself began and narrowed this process's event log (so a running log
    is not the program's own)."""
    return _narrowed


def full_log_requested(petsc: Any) -> str | None:
    """The option with which the user asked for PETSc's full event log, if any."""
    opts = petsc.Options()
    return next((f"-{name}" for name in FULL_LOG_OPTIONS if opts.hasName(name)), None)


def _libpetsc(petsc: Any) -> Any:
    """libpetsc's symbols, reached through petsc4py's extension module (its dependency)."""
    return ctypes.CDLL(petsc.__file__)


def keep_only_needed(petsc: Any) -> str:
    """Log only :data:`NEEDED` from now on (every registered PETSc class's events deactivated
    in the current stage); returns the ``event_log`` attribute. Call it after the solver is
    set up: a package that registers its events later has them active. With the full log
    requested by the user, nothing is deactivated and :data:`ALL` is returned."""
    petsc.Log.begin()  # a no-op when the log already runs
    if full_log_requested(petsc) is not None:
        return ALL
    lib = _libpetsc(petsc)
    largest = ctypes.c_int.in_dll(lib, "PETSC_LARGEST_CLASSID").value
    deactivate = lib.PetscLogEventDeactivateClass
    deactivate.argtypes = [ctypes.c_int]
    deactivate.restype = ctypes.c_int
    for classid in range(SMALLEST_CLASSID, largest + 1):
        if deactivate(classid) != 0:
            raise RuntimeError(f"PetscLogEventDeactivateClass({classid}) failed")
    for name in NEEDED:
        petsc.Log.Event(name).activate()
    global _narrowed
    _narrowed = True
    return ONLY
