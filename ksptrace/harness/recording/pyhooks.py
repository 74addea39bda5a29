"""ksptrace.record's pre- and post-solve hooks in Python: where the C ones cannot be had.

The C hooks (:mod:`ksptrace.harness.recording.solvehooks`) need the C monitor and PETSc's message
counters. Without them (no compiler, ``KSPTRACE_MONITOR=python``, a PETSc without counters)
these ctypes callbacks do the same work, at some 20 µs per solve: every solve stamps into one
growing buffer, the pre-solve hook points the monitor at the free slots after the last solve,
the post-solve hook reads the solve's iteration count, converged reason, time (``MPI_Wtime`` in
the two hooks) and reductions (:class:`ksptrace.harness.monitoring.eventlog.SolveLog`) and moves the
free slots on. Nothing may escape into PETSc's C code: an error is kept and raised after the block.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ksptrace.errors import KsptraceError, SolverError
from ksptrace.harness.monitoring.eventlog import Snapshot, SolveLog
from ksptrace.harness.monitoring.monitor import StampMonitor
from ksptrace.harness.recording.solvehooks import Recorded

HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_void_p)
"""``PetscErrorCode (*)(KSP, Vec, Vec, void *)``: KSPSetPreSolve's and KSPSetPostSolve's hook."""


class PythonHooks:
    """The Python hooks of one record block on one KSP."""

    def __init__(self, ksp: Any, monitor: StampMonitor, log: SolveLog, spare: int) -> None:
        self.ksp, self.monitor, self.log, self.spare = ksp, monitor, log, spare
        self._hooks = (HOOK(self._pre), HOOK(self._post))  # kept alive while attached
        self._buffer = (np.full(0, np.nan), np.full(0, np.nan))
        """Stamps and norms of every solve, one after the other (NaN: not reported)."""
        self._ends: list[int] = []
        """Where each recorded solve's slots end in the buffer (the next one starts there)."""
        self._open = False
        """A solve started and has not ended (its post-solve hook never ran)."""
        self._seconds: list[float] = []
        self._reasons: list[int] = []
        self._its: list[int] = []
        self._reductions = [0.0, 0.0]
        self._before = 0.0
        self._before_count: Snapshot | None = None
        self._error: KsptraceError | None = None

    @property
    def solves(self) -> int:
        return len(self._ends)

    def attach(self, lib: Any, handle: ctypes.c_void_p) -> None:
        self._make_room(self._needed())
        lib.KSPSetPreSolve(handle, self._hooks[0], None)
        lib.KSPSetPostSolve(handle, self._hooks[1], None)

    def results(self, ksp_type: str) -> Recorded:
        del ksp_type  # the Python hooks named their errors already
        return Recorded(self._buffer[0], self._buffer[1], self._ends, self._seconds, self._its,
                        self._reasons, self._reductions[0], self._reductions[1], self._error)

    def free(self) -> None:
        """Nothing to give back (the callbacks go with this object)."""

    def _needed(self) -> int:
        return int(self.ksp.getTolerances()[3]) + 1 + self.spare

    def _start(self) -> int:
        return self._ends[-1] if self._ends else 0

    def _make_room(self, needed: int) -> None:
        """Point the monitor at ``needed`` free slots after the last recorded solve."""
        start = self._start()
        stamps, norms = self._buffer
        if start + needed > stamps.shape[0]:
            size = max(2 * stamps.shape[0], start + needed, 4096)
            grown = (np.full(size, np.nan), np.full(size, np.nan))
            grown[0][:start], grown[1][:start] = stamps[:start], norms[:start]
            self._buffer = stamps, norms = grown
        elif self._open:  # the last solve never ended (an exception inside KSPSolve)
            stamps[start:start + needed] = np.nan
            norms[start:start + needed] = np.nan
        self.monitor.window(stamps, norms, start, needed)

    def _pre(self, *_: Any) -> int:
        try:
            self._make_room(self._needed())
            self._open = True
            self._before_count = self.log.read()
            self._before = self.monitor.wtime()
        except BaseException as exc:  # nothing may escape into PETSc's C code
            self._fail(SolverError(f"ksptrace.record: {type(exc).__name__}: {exc}"))
        return 0

    def _post(self, *_: Any) -> int:
        try:
            seconds = self.monitor.wtime() - self._before
            assert self._before_count is not None
            count = self.log.read()
            its = int(self.ksp.getIterationNumber())
            st = self.monitor.stamps
            # PETSc's count is the last call the monitor saw, unless a method says otherwise
            usual = its + 1 < st.shape[0] and st[its] == st[its] and st[its + 1] != st[its + 1]
            last = its if usual else self._last_call(its)
            if self.monitor.beyond[0]:
                self.monitor.check(self.ksp.getType(), last)  # raises, saying why
            self._ends.append(self._start() + last + 1)
            self._open = False
            self._seconds.append(seconds)
            self._reasons.append(int(self.ksp.getConvergedReason()))  # named at the end
            self._its.append(its)
            self._reductions[0] += count.blocking - self._before_count.blocking
            self._reductions[1] += count.split - self._before_count.split
        except KsptraceError as exc:
            self._fail(exc)
        except BaseException as exc:  # nothing may escape into PETSc's C code
            self._fail(SolverError(f"ksptrace.record: {type(exc).__name__}: {exc}"))
        return 0

    def _last_call(self, its: int) -> int:
        """The last iteration number the monitor saw: usually PETSc's count, else found."""
        st = self.monitor.stamps
        if its < st.shape[0] and not np.isnan(st[its]) and (
                its + 1 == st.shape[0] or np.isnan(st[its + 1])):
            return its
        seen = np.flatnonzero(~np.isnan(st))
        if seen.size == 0:
            raise SolverError(f"KSP type {self.ksp.getType()} reported no iteration to the "
                              "monitor; ksptrace.record needs a Krylov method")
        return int(seen[-1])

    def _fail(self, error: KsptraceError) -> None:
        self._error = self._error or error
        self.monitor.reset()
