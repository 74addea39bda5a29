"""PETSc's message counters: the reductions of a solve counted with the event log off.

A PETSc built with logging (the default, and Debian's and PyPI's builds) counts every MPI call
it makes in global variables, whether or not the event log runs: ``petsc_allreduce_ct``,
``petsc_gather_ct`` and ``petsc_scatter_ct`` are what the KSPSolve event's reductions (the
``Reduct`` column of ``-log_view``) add up, and every split-phase reduction of a pipelined
method (``VecReduceBegin``: one ``MPI_Iallreduce``) ends in one ``MPI_Wait``,
``petsc_wait_ct``. Reading them before and after the timed solve gives PETSc's own counts at
no cost inside the solve (tests/harness/test_eventlog.py checks them against the event log's
for cg and pipecg).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

BLOCKING = ("petsc_allreduce_ct", "petsc_gather_ct", "petsc_scatter_ct")
SPLIT = "petsc_wait_ct"
SOURCE = ("PETSc's message counters around the timed solve (they count with or without "
          "the event log): allreduce, gather and scatter calls (blocking: what the KSPSolve "
          "event's reductions count) and MPI_Wait calls (split-phase: each VecReduceBegin's "
          "reduction ends in one)")


@dataclass(frozen=True)
class Count:
    """Counter values at one moment (differences of two are a solve's reductions)."""

    blocking: float
    split: float

    def __sub__(self, other: Count) -> Count:
        return Count(self.blocking - other.blocking, self.split - other.split)


class Counters:
    """The counters of one PETSc library, read through ctypes."""

    def __init__(self, lib: Any) -> None:
        self.blocking = tuple(ctypes.c_double.in_dll(lib, name) for name in BLOCKING)
        self.split = ctypes.c_double.in_dll(lib, SPLIT)
        self.addresses = tuple(ctypes.addressof(v) for v in (*self.blocking, self.split))
        """Where the counters live (the C solve hooks of ksptrace.record read them there)."""

    def read(self) -> Count:
        return Count(sum(v.value for v in self.blocking), self.split.value)


def find(petsc: Any) -> Counters | None:
    """The counters of petsc4py's PETSc, or None when the build has none (logging compiled
    out): then the event log counts instead."""
    try:
        return Counters(ctypes.CDLL(petsc.__file__))
    except (OSError, ValueError):  # ValueError: symbol not found
        return None
