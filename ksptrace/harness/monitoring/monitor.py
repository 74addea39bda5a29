"""The KSP monitor that stamps MPI.Wtime() at every iteration, with no allocation per call.

Two implementations fill the same arrays. The C monitor (:mod:`ksptrace.harness.monitoring.native`)
is used wherever it can be built and costs some 30 ns per iteration. The Python callback is the
fallback: a closure whose arrays, clock and capacity are bound as default arguments, so a call
does two stores into preallocated numpy arrays, about 0.15 us on top of petsc4py's own 0.3 us
per monitor call (see bench/overhead.py).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ksptrace.errors import SolverError
from ksptrace.harness.monitoring import mpiwait, native

MonitorCallback = Callable[[Any, int, float], None]
_owners = itertools.count(1)


def _stamping_callback(
    stamps: np.ndarray, norms: np.ndarray, beyond: np.ndarray, wtime: Callable[[], float],
    marks: np.ndarray | None = None, totals: np.ndarray | None = None,
) -> MonitorCallback:
    if marks is not None and totals is not None:
        return _marking_callback(stamps, norms, beyond, wtime, marks, totals)

    def monitor(
        ksp: Any,
        its: int,
        rnorm: float,
        st: np.ndarray = stamps,
        nr: np.ndarray = norms,
        w: Callable[[], float] = wtime,
        b: np.ndarray = beyond,
    ) -> None:
        try:  # free when nothing is raised (Python >= 3.11), unlike a bounds test
            st[its] = w()
            nr[its] = rnorm
        except IndexError:  # more iterations than forced: check() reports it
            b[0] = max(b[0], its)

    return monitor


def _marking_callback(
    stamps: np.ndarray, norms: np.ndarray, beyond: np.ndarray, wtime: Callable[[], float],
    marks: np.ndarray, totals: np.ndarray,
) -> MonitorCallback:
    """The Python monitor that also copies the MPI wait totals (see :mod:`.mpiwait`)."""

    def monitor(
        ksp: Any,
        its: int,
        rnorm: float,
        st: np.ndarray = stamps,
        nr: np.ndarray = norms,
        w: Callable[[], float] = wtime,
        b: np.ndarray = beyond,
        mk: np.ndarray = marks,
        tot: np.ndarray = totals,
    ) -> None:
        try:
            st[its] = w()
            nr[its] = rnorm
            mk[its] = tot
        except IndexError:
            b[0] = max(b[0], its)

    return monitor


def _remove_callback(ksp: Any, callback: MonitorCallback) -> None:
    """Take ``callback`` out of petsc4py's monitor list of ``ksp`` (PETSc keeps calling
    petsc4py's dispatcher, which then calls the others)."""
    monitors = ksp.getMonitor() or []
    for entry in list(monitors):
        if entry[0] is callback:
            monitors.remove(entry)


class StampMonitor:
    """Wall-clock time and residual norm of every iteration, in preallocated arrays.

    ``stamps[k]`` is the time at which the KSP reported iteration ``k`` (``k = 0`` before the
    first iteration), as PETSc's own ``-ksp_monitor`` numbers them. A method that reported one
    iteration number twice (tfqmr's two half steps) keeps the later report. Slots start as NaN,
    so an iteration that was never reported is detected rather than read as zero.

    :meth:`attach` puts it on a KSP: the C monitor when it can be had, else :attr:`callback`.
    :attr:`impl` says which (``"c"`` or ``"python"``), :attr:`why_python` why not C.

    Given a wait counter (:mod:`.mpiwait`), each call also copies its running totals (seconds
    in MPI reductions, reductions started) into ``marks[k]``; :meth:`waits` turns them into
    each iteration's wait and reduction count.
    """

    __slots__ = (
        "__weakref__",
        "_bound",
        "_homes",
        "_ksp",
        "_owner",
        "_unbind",
        "beyond",
        "callback",
        "counter",
        "impl",
        "marks",
        "norms",
        "stamps",
        "why_python",
        "wtime",
    )

    def __init__(self, capacity: int, wtime: Callable[[], float],
                 counter: mpiwait.WaitCounter | None = None) -> None:
        self.wtime = wtime
        self.counter = counter
        self.beyond = np.zeros(1, dtype=np.int64)
        """The highest iteration number reported beyond the capacity (0: none)."""
        self._owner = next(_owners)
        self._bound: tuple[Any, int] | None = None
        self._unbind: weakref.finalize | None = None
        self._ksp: Any = None
        self.impl = "python"
        self.why_python = "not attached"
        self._homes: tuple[Any, Any, int, int, int] | None = None
        self._allocate(capacity)

    def _allocate(self, capacity: int) -> None:
        self.stamps = np.full(capacity, np.nan)
        self.norms = np.full(capacity, np.nan)
        self.marks = None if self.counter is None else np.full((capacity, 2), np.nan)
        self.callback: MonitorCallback = _stamping_callback(
            self.stamps, self.norms, self.beyond, self.wtime, self.marks, self._totals()
        )

    def _totals(self) -> np.ndarray | None:
        """The counter's two running totals, as an array over its memory (None: no counter)."""
        if self.counter is None:
            return None
        import ctypes

        return np.ctypeslib.as_array((ctypes.c_double * 2).from_address(self.counter.totals))

    def _mark_args(self) -> tuple[int, Any] | None:
        return None if self.counter is None else (self.counter.totals, self.marks)

    def attach(self, ksp: Any) -> str:
        """Stamp ``ksp``'s iterations from now on; returns the implementation used."""
        if self._ksp is not None:
            raise SolverError("this monitor is already attached to a KSP; detach it first")
        found = native.native(self.wtime)
        if not isinstance(found, str):
            ctx = native.bind(found, ksp, (self.stamps, self.norms, self.beyond),
                              self.stamps.shape[0], self._owner, self._mark_args())
            if ctx is not None:
                self._bound = (found.lib, ctx)
                # runs once: at detach, or when the monitor is collected while attached
                self._unbind = weakref.finalize(self, native.unbind, found.lib, ctx, self._owner)
                self._ksp, self.impl, self.why_python = ksp, "c", ""
                return self.impl
            found = "PETSc refused another monitor on this KSP"
        ksp.setMonitor(self.callback)
        self._ksp, self.impl, self.why_python = ksp, "python", found
        return self.impl

    def native_context(self) -> tuple[Any, int, int] | None:
        """The C library, the C context and this monitor's owner number while the C monitor
        stamps for it (ksptrace.record's C hooks move its window), else None."""
        if self._bound is None:
            return None
        return self._bound[0], self._bound[1], self._owner

    def detach(self) -> None:
        """Stop stamping (the C context is kept for the KSP's next monitor)."""
        if self._ksp is None:
            return
        if self._bound is not None:
            if self._unbind is not None:
                self._unbind()
            self._bound = self._unbind = None
        else:
            _remove_callback(self._ksp, self.callback)
        self._ksp = None

    def in_petsc(self) -> bool:
        """Whether PETSc still calls this monitor: a program may take every monitor off the KSP
        (``KSPMonitorCancel``, ``ksp.cancelMonitor()``)."""
        if self._ksp is None or not self._ksp.handle:
            return False
        if self._bound is not None:
            lib, ctx = self._bound
            return bool(lib.ksptrace_stamp_serves(ctx, int(self._ksp.handle)))
        return any(entry[0] is self.callback for entry in self._ksp.getMonitor() or ())

    def forget(self) -> None:
        """Let go of a KSP that PETSc already destroyed (with its monitors): give back the C
        context's reference, touch nothing of the KSP."""
        if self._unbind is not None:
            self._unbind()
        self._bound = self._unbind = None
        self._ksp = None

    def resize(self, capacity: int) -> None:
        """Room for ``capacity`` calls (stamps so far are dropped), attached or not."""
        old = self.callback
        self._allocate(capacity)
        self.beyond[0] = 0
        if self._bound is not None:
            native.bind_again(self._bound[0], self._bound[1],
                              (self.stamps, self.norms, self.beyond), capacity, self._owner,
                              self._mark_args())
        elif self._ksp is not None:
            _remove_callback(self._ksp, old)
            self._ksp.setMonitor(self.callback)

    def window(self, stamps: np.ndarray, norms: np.ndarray, start: int, capacity: int) -> None:
        """Stamp into ``stamps[start:start + capacity]`` and ``norms[...]`` (the caller's
        float64 arrays, NaN where nothing was reported) from the next call on.

        ``ksptrace.record`` keeps every solve in one buffer this way, with nothing copied or
        reset between solves; for the C monitor a move costs one foreign call (the arrays'
        addresses are looked up once per buffer), for the Python fallback a new callback.
        """
        self.stamps = stamps[start:start + capacity]
        self.norms = norms[start:start + capacity]
        if self._bound is not None:
            homes = self._homes
            if homes is None or homes[0] is not stamps or homes[1] is not norms:
                homes = (stamps, norms, stamps.ctypes.data, norms.ctypes.data,
                         self.beyond.ctypes.data)
                self._homes = homes
            lib, ctx = self._bound
            lib.ksptrace_stamp_target(ctx, homes[2] + 8 * start, homes[3] + 8 * start, homes[4],
                                      capacity, self._owner)
            return
        old = self.callback
        self.callback = _stamping_callback(self.stamps, self.norms, self.beyond, self.wtime)
        if self._ksp is not None:
            _remove_callback(self._ksp, old)
            self._ksp.setMonitor(self.callback)

    def reset(self) -> None:
        self.stamps.fill(np.nan)
        self.norms.fill(np.nan)
        if self.marks is not None:
            self.marks.fill(np.nan)
        self.beyond[0] = 0

    def waits(self, iterations: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Each of iterations 1..``iterations``' time in MPI reductions (float64) and
        reductions started (int64), once :meth:`recorded` passed; None without a counter."""
        if self.marks is None:
            return None
        marks = self.marks[: iterations + 1]
        if np.isnan(marks).any():
            raise SolverError("the wait totals were not copied at every iteration; rerun with "
                              f"{mpiwait.WAITS_ENV}=off and report this")
        return mpiwait.per_iteration(marks)

    def check(self, ksp_type: str, upto: int) -> None:
        """Raise a SolverError that says why, unless iterations 0..``upto`` were all reported
        and none beyond the capacity."""
        check_reported(self.stamps, int(self.beyond[0]), ksp_type, upto)

    def recorded(
        self, iterations: int, ksp_type: str = "the KSP"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the stamps and norms of iterations 0..``iterations``, once check() passes."""
        count = iterations + 1
        if count > self.stamps.shape[0]:
            self.beyond[0] = max(self.beyond[0], iterations)
        self.check(ksp_type, iterations)
        return self.stamps[:count].copy(), self.norms[:count].copy()


def check_reported(stamps: np.ndarray, beyond: int, ksp_type: str, upto: int) -> None:
    """Raise a SolverError that says why, unless ``stamps`` (one solve's slots) hold
    iterations 0..``upto`` and no iteration was reported beyond them (``beyond``)."""
    forced = stamps.shape[0] - 1
    upto = min(upto, forced)
    seen = np.flatnonzero(~np.isnan(stamps[: upto + 1]))
    steps = np.unique(np.diff(seen))
    if seen.size >= 2 and seen[0] == 0 and steps.size == 1 and steps[0] > 1:
        shown = ", ".join(str(int(i)) for i in seen[:4])
        raise SolverError(
            f"{ksp_type} reports only one iteration in {int(steps[0])} to the monitor "
            f"({shown}, ...), so single iterations cannot be timed; use another KSP type"
        )
    if beyond:
        raise SolverError(
            f"{ksp_type} reported iteration {beyond}, more than the {forced} "
            "forced; remove -ksp_max_it from the PETSc options"
        )
    if seen.size == upto + 1:
        return
    missing = int(np.flatnonzero(np.isnan(stamps[: upto + 1]))[0])
    raise SolverError(
        f"{ksp_type} never reported iteration {missing} of 0..{upto} to the monitor"
        f"{' (the start of the first iteration)' if missing == 0 else ''}, so it cannot "
        "be timed per iteration; use another KSP type"
    )
