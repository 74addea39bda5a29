"""ksptrace.record's pre- and post-solve hooks in C (``stamp_monitor.c``), for many small solves.

Hooks written in Python cost some 20 µs per solve (two ctypes callbacks and their bodies): 3 %
of a 0.7 ms solve. The C hooks do the same work without entering the interpreter: the
pre-solve hook moves the C monitor's window to the free slots of one buffer and notes the clock
and PETSc's message counters (:mod:`ksptrace.harness.monitoring.counters`), the post-solve hook
notes them again with the iteration count and the converged reason, in per-solve arrays. The buffers
are the C context's own and grow by ``realloc`` (pages remapped, not copied), NaN-filled only as
far as the next solve may reach: growing them inside a solve once cost that solve 2-4 ms with
numpy arrays filled whole (bench/record_spikes.py found the spikes at solves 128, 256, 512 and
1024). After the block, :meth:`NativeHooks.results` copies the recording out in the form the
Python hooks keep, so both paths share the rest of
:class:`ksptrace.harness.recording.record.Recorder`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksptrace.errors import KsptraceError, OutputError, SolverError
from ksptrace.harness.monitoring.counters import Counters
from ksptrace.harness.monitoring.monitor import check_reported

_vp = ctypes.c_void_p
_ll = ctypes.c_longlong
NO_ROOM, NONE_REPORTED, BEYOND, PETSC = 1, 2, 3, 4
"""The C hooks' error codes (REC_* in stamp_monitor.c)."""


@dataclass(frozen=True)
class Recorded:
    """What the hooks recorded: one buffer of stamps and norms, and per solve where its slots
    end, its seconds, iterations, converged reason and reductions."""

    stamps: np.ndarray
    norms: np.ndarray
    ends: list[int]
    seconds: list[float]
    its: list[int]
    reasons: list[int]
    blocking: float
    split: float
    error: KsptraceError | None
    marks: np.ndarray | None = None
    """[slots, 2]: the MPI wait totals at each monitor call (with wait accounting)."""


def _declare(lib: Any) -> None:
    lib.ksptrace_record_new.restype = _vp
    lib.ksptrace_record_new.argtypes = [_vp, _ll, _vp, _vp, _vp, _vp, _vp, _ll, _vp, _vp, _vp,
                                        _vp]
    lib.ksptrace_record_free.restype = None
    lib.ksptrace_record_free.argtypes = [_vp]
    lib.ksptrace_record_copy.restype = None
    lib.ksptrace_record_copy.argtypes = [_vp, _ll, _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp]
    lib.ksptrace_record_state.restype = None
    lib.ksptrace_record_state.argtypes = [_vp, _vp]
    lib.ksptrace_record_marks.restype = None
    lib.ksptrace_record_marks.argtypes = [_vp, _vp]
    lib.ksptrace_record_copy_marks.restype = None
    lib.ksptrace_record_copy_marks.argtypes = [_vp, _ll, _vp]


def _address(function: Any) -> int:
    value = ctypes.cast(function, _vp).value
    assert value is not None
    return value


class NativeHooks:
    """The C hooks of one record block on one KSP (the C monitor must stamp for it)."""

    def __init__(self, context: tuple[Any, int, int], beyond: np.ndarray, counters: Counters,
                 petsc: Any, wtime: int, spare: int, totals: int | None = None) -> None:
        lib, monitor_ctx, owner = context
        _declare(lib)
        self._lib = lib
        self._ctx = lib.ksptrace_record_new(
            monitor_ctx, owner, beyond.ctypes.data, *counters.addresses, spare, wtime,
            _address(petsc.KSPGetIterationNumber), _address(petsc.KSPGetConvergedReason),
            _address(petsc.KSPGetTolerances))
        if not self._ctx:
            raise OutputError("ksptrace.record: no memory for its solve hooks")
        self._marks = totals is not None
        if totals is not None:  # the MPI wait totals, copied at every monitor call
            lib.ksptrace_record_marks(self._ctx, totals)
        self._beyond = beyond
        self._state = np.zeros(6, dtype=np.int64)
        self.pre, self.post = _address(lib.ksptrace_presolve), _address(lib.ksptrace_postsolve)
        """The hooks' addresses, for KSPSetPreSolve and KSPSetPostSolve with :attr:`ctx`."""

    def attach(self, lib: Any, handle: ctypes.c_void_p) -> None:
        """Put the hooks on the KSP of ``handle`` (``lib``: libpetsc)."""
        ctx = _vp(self.ctx)
        lib.KSPSetPreSolve(handle, _vp(self.pre), ctx)
        lib.KSPSetPostSolve(handle, _vp(self.post), ctx)

    @property
    def solves(self) -> int:
        """Solves recorded so far (0 once freed)."""
        return self._read_state()[0] if self._ctx else 0

    @property
    def ctx(self) -> int:
        return int(self._ctx)

    def _read_state(self) -> tuple[int, ...]:
        """solves, start, error, failed solve, window, filled (see stamp_monitor.c)."""
        self._lib.ksptrace_record_state(self._ctx, self._state.ctypes.data)
        return tuple(int(v) for v in self._state)

    def results(self, ksp_type: str) -> Recorded:
        """The recording, after the block (the hooks are detached)."""
        solves, start, code, failed, window, filled = self._read_state()
        upto = min(filled, start + window if code == BEYOND else start)
        stamps, norms = np.full(upto, np.nan), np.full(upto, np.nan)
        seconds, blocking, split = np.zeros(solves), np.zeros(solves), np.zeros(solves)
        ends, its, reasons = (np.zeros(solves, dtype=np.int64) for _ in range(3))
        self._lib.ksptrace_record_copy(
            self._ctx, upto, *(a.ctypes.data for a in (stamps, norms, seconds, blocking, split,
                                                        ends, its, reasons)))
        marks = None
        if self._marks:
            marks = np.full((upto, 2), np.nan)
            self._lib.ksptrace_record_copy_marks(self._ctx, upto, marks.ctypes.data)
        error: KsptraceError | None = None
        if code == NO_ROOM:
            error = OutputError(f"ksptrace.record: no memory for the stamps of solve "
                                f"{failed + 1}")
        elif code == NONE_REPORTED:
            error = SolverError(f"KSP type {ksp_type} reported no iteration to the monitor; "
                                "ksptrace.record needs a Krylov method")
        elif code == BEYOND:
            try:
                check_reported(stamps[start:start + window], int(self._beyond[0]), ksp_type,
                               window - 1)
            except SolverError as exc:
                error = SolverError(f"solve {failed + 1}: {exc}")
        elif code == PETSC:
            error = SolverError(f"ksptrace.record: PETSc refused to report solve "
                                f"{failed + 1}'s iterations")
        return Recorded(stamps, norms, ends.tolist(), seconds.tolist(), its.tolist(),
                        reasons.tolist(), float(blocking.sum()), float(split.sum()), error,
                        marks)

    def free(self) -> None:
        """Give back the C context (after the hooks are off the KSP)."""
        if self._ctx:
            self._lib.ksptrace_record_free(self._ctx)
            self._ctx = None
