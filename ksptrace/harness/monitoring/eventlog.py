"""PETSc's event log during a timed solve: off, or only the two events ksptrace reads.

By default the timed solve runs with no event log at all: the solve is timed with
``MPI_Wtime`` around ``KSPSolve`` and its reductions come from PETSc's message counters
(:mod:`ksptrace.harness.monitoring.counters`), so the solver runs exactly as in a program that logs
nothing. Only where the KSPSolve event itself is needed (a problem whose timed solve is more
than one KSPSolve, such as a Newton step, or a PETSc without counters) is the log begun, and
then narrowed as follows.

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
from dataclasses import dataclass
from typing import Any

from ksptrace.harness.monitoring import counters

OFF = "off"
"""The ``event_log`` attribute of a solve timed with no event log (ksptrace's default)."""
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
EVENT_TIME_SOURCE = "PETSc's KSPSolve event on each rank"
HOOK_TIME_SOURCE = "MPI_Wtime in KSPSolve's pre- and post-solve hooks on each rank"
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


@dataclass(frozen=True)
class Snapshot:
    """PETSc's counts at one moment: reductions (blocking and split-phase) and, with the event
    log on, the KSPSolve event's time and calls (None with the log off)."""

    blocking: float
    split: float
    seconds: float | None
    solves: float | None


class SolveLog:
    """How a timed solve is counted: PETSc's message counters with the log off, or the
    KSPSolve and VecReduceBegin events with it on. :meth:`read` before and after the solve."""

    def __init__(self, petsc: Any, needs_event: bool, program_logs: bool = False) -> None:
        found = None if needs_event else counters.find(petsc)
        if program_logs:  # a program's own log stays as it is
            self.event_log = ALL + " (the program's own log)"
        elif found is None or full_log_requested(petsc) is not None:
            self.event_log = keep_only_needed(petsc)
        else:
            self.event_log = OFF
        """The trace's ``event_log`` attribute."""
        self.logged = self.event_log != OFF
        self.counters = found
        self.reductions_source = REDUCTIONS_SOURCE if self.logged else counters.SOURCE
        self._events = ((petsc.Log.Event("KSPSolve"), petsc.Log.Event("VecReduceBegin"))
                        if self.logged else None)

    def read(self) -> Snapshot:
        if self._events is None:
            assert self.counters is not None
            count = self.counters.read()
            return Snapshot(count.blocking, count.split, None, None)
        info, split = (e.getPerfInfo() for e in self._events)
        return Snapshot(float(info["numReductions"]), float(split["count"]),
                        float(info["time"]), float(info["count"]))
