"""ksptrace.record's pre- and post-solve hooks in C (``stamp_monitor.c``), for many small solves.

Hooks written in Python cost some 20 µs per solve (two ctypes callbacks and their bodies): 3 %
of a 0.7 ms solve. The C hooks do the same work without entering the interpreter: the
pre-solve hook moves the C monitor's window to the free slots of one buffer and notes the clock
and PETSc's message counters (:mod:`ksptrace.harness.counters`), the post-solve hook notes them
again with the iteration count and the converged reason, in per-solve arrays. Python is called
only when the buffer or the per-solve arrays are full, to give larger ones. After the block,
:meth:`NativeHooks.results` hands the recording to :class:`ksptrace.harness.record.Recorder` in
the form its Python hooks keep, so both paths share the rest.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksptrace.errors import KsptraceError, OutputError, SolverError
from ksptrace.harness.counters import Counters
from ksptrace.harness.monitor import check_reported

_vp = ctypes.c_void_p
_ll = ctypes.c_longlong
_GROW = ctypes.CFUNCTYPE(ctypes.c_int, _ll)
NO_ROOM, NONE_REPORTED, BEYOND, PETSC = 1, 2, 3, 4
"""The C hooks' error codes (REC_* in stamp_monitor.c)."""
FIRST_SLOTS, FIRST_ROWS = 4096, 64


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


def _declare(lib: Any) -> None:
    lib.ksptrace_record_new.restype = _vp
    lib.ksptrace_record_new.argtypes = [_vp, _ll, _vp, _vp, _vp, _vp, _vp, _ll, _vp, _vp, _vp,
                                        _vp, _GROW]
    lib.ksptrace_record_free.restype = None
    lib.ksptrace_record_free.argtypes = [_vp]
    lib.ksptrace_record_buffers.restype = None
    lib.ksptrace_record_buffers.argtypes = [_vp, _vp, _vp, _ll, _vp, _vp, _vp, _vp, _vp, _vp,
                                            _ll]
    lib.ksptrace_record_state.restype = None
    lib.ksptrace_record_state.argtypes = [_vp, _vp]


def _address(function: Any) -> int:
    value = ctypes.cast(function, _vp).value
    assert value is not None
    return value


class NativeHooks:
    """The C hooks of one record block on one KSP (the C monitor must stamp for it)."""

    def __init__(self, context: tuple[Any, int, int], beyond: np.ndarray, counters: Counters,
                 petsc: Any, wtime: int, spare: int) -> None:
        lib, monitor_ctx, owner = context
        _declare(lib)
        self._lib, self._petsc = lib, petsc
        self._grow_hook = _GROW(self._grow)  # kept alive while the C code may call it
        self._ctx = lib.ksptrace_record_new(
            monitor_ctx, owner, beyond.ctypes.data, *counters.addresses, spare, wtime,
            _address(petsc.KSPGetIterationNumber), _address(petsc.KSPGetConvergedReason),
            _address(petsc.KSPGetTolerances), self._grow_hook)
        if not self._ctx:
            raise OutputError("ksptrace.record: no memory for its solve hooks")
        self._beyond = beyond
        self._state = np.zeros(5, dtype=np.int64)
        self._arrays: tuple[np.ndarray, ...] = ()
        self._give(FIRST_SLOTS, FIRST_ROWS)
        self.pre, self.post = _address(lib.ksptrace_presolve), _address(lib.ksptrace_postsolve)
        """The hooks' addresses, for KSPSetPreSolve and KSPSetPostSolve with :attr:`ctx`."""

    def attach(self, lib: Any, handle: ctypes.c_void_p) -> None:
        """Put the hooks on the KSP of ``handle`` (``lib``: libpetsc)."""
        ctx = _vp(self.ctx)
        lib.KSPSetPreSolve(handle, _vp(self.pre), ctx)
        lib.KSPSetPostSolve(handle, _vp(self.post), ctx)

    @property
    def solves(self) -> int:
        """Solves recorded so far."""
        return self._read_state()[0]

    @property
    def ctx(self) -> int:
        return int(self._ctx)

    def _read_state(self) -> tuple[int, int, int, int, int]:
        self._lib.ksptrace_record_state(self._ctx, self._state.ctypes.data)
        solves, start, error, failed, window = (int(v) for v in self._state)
        return solves, start, error, failed, window

    def _give(self, slots: int, rows: int) -> None:
        """Arrays of ``slots`` and ``rows``, holding what the old ones held."""
        solves, start = self._read_state()[:2] if self._arrays else (0, 0)
        grown = (np.full(slots, np.nan), np.full(slots, np.nan), np.zeros(rows),
                 np.zeros(rows), np.zeros(rows), np.zeros(rows, dtype=np.int64),
                 np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=np.int64))
        for new, old, used in zip(grown, self._arrays, (start, start) + (solves,) * 6,
                                  strict=False):
            new[:used] = old[:used]
        self._arrays = grown
        stamps, norms, seconds, blocking, split, ends, its, reasons = grown
        self._lib.ksptrace_record_buffers(
            self._ctx, stamps.ctypes.data, norms.ctypes.data, slots, seconds.ctypes.data,
            blocking.ctypes.data, split.ctypes.data, ends.ctypes.data, its.ctypes.data,
            reasons.ctypes.data, rows)

    def _grow(self, needed: int) -> int:
        """The C hooks ran out of room: larger arrays (0), or 1 when there is no memory."""
        try:
            solves, start = self._read_state()[:2]
            slots, rows = self._arrays[0].shape[0], self._arrays[2].shape[0]
            self._give(max(2 * slots, start + int(needed)),
                       2 * rows if solves >= rows else rows)
            return 0
        except BaseException:  # nothing may escape into PETSc's C code
            return 1

    def results(self, ksp_type: str) -> Recorded:
        """The recording, after the block (the hooks are detached)."""
        solves, start, code, failed, window = self._read_state()
        stamps, norms, seconds, blocking, split, ends, its, reasons = self._arrays
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
        return Recorded(stamps, norms, [int(e) for e in ends[:solves]],
                        [float(s) for s in seconds[:solves]], [int(i) for i in its[:solves]],
                        [int(r) for r in reasons[:solves]], float(blocking[:solves].sum()),
                        float(split[:solves].sum()), error)

    def free(self) -> None:
        """Give back the C context (after the hooks are off the KSP)."""
        if self._ctx:
            self._lib.ksptrace_record_free(self._ctx)
            self._ctx = None
