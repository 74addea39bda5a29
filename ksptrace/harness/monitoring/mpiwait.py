"""Wait time in MPI reductions per iteration: the interposer ``mpi_wait.c``, built and installed.

:func:`counter` compiles ``mpi_wait.c`` once per machine (like the C monitor, into a private
cache folder, its digest checked before each load:
:func:`ksptrace.harness.monitoring.native.load_built`) and rewrites the PLT slots of the loaded
libpetsc for MPI's reduction entry points, so that every reduction PETSc makes reads ``MPI_Wtime``
on entry and on exit and adds to two running totals: seconds in reductions and reductions started.
The stamping monitor copies both totals at each iteration
(:class:`ksptrace.harness.monitoring.monitor.StampMonitor`); their differences are a trace's
``wait_seconds`` and ``mpi_calls``.

Which entry points carry time: the blocking reductions (``MPI_Allreduce`` and its kin) their
whole duration; ``MPI_Iallreduce`` the time to start; the completions (``MPI_Wait``,
``MPI_Waitall``, ``MPI_Waitany``, ``MPI_Waitsome``, ``MPI_Test``, ``MPI_Testall``) only when
they complete an ``MPI_Iallreduce``'s request (the wait of a pipelined method), never a halo
exchange's. A trace names the entry points rewritten (attribute ``wait_entry_points``) and
the time and calls each carried (``wait_by_entry``).

``KSPTRACE_MPI_WAITS=off`` turns it off (traces then have no ``wait_seconds``); ``=on`` makes
a missing interposer an error instead of a run without the datasets.

With ``events`` (``--events``) it also rewrites libpetsc's slots of ``MatMult``, ``PCApply``,
``VecMDot``, ``VecNorm`` and ``VecDot``: each outermost call leaves a span (start, end, kind)
that :meth:`WaitCounter.spans` hands over and
:func:`ksptrace.trace.iteration_events.per_iteration` sums per iteration.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ksptrace.errors import EnvironmentProblem
from ksptrace.harness.monitoring import native

WAITS_ENV = "KSPTRACE_MPI_WAITS"
"""``auto`` (default): wait accounting where it can be installed; ``on``: it or an error;
``off``: none."""
SOURCE = Path(__file__).with_name("mpi_wait.c")
ACCOUNTING = "libpetsc PLT interposition (mpi_wait.c), MPI_Wtime on entry and exit"
"""The trace attribute ``wait_accounting`` of a run with wait times."""
LIBRARY_MATCH = "libpetsc"
"""The libraries whose PLT slots are rewritten: those whose file name contains this."""
_vp = ctypes.c_void_p


@dataclass(frozen=True)
class WaitCounter:
    """The loaded interposer: the address of its two running totals, and what it rewrote."""

    lib: ctypes.CDLL
    totals: int
    """Address of two doubles: seconds in reductions, reductions started."""
    entry_points: tuple[str, ...]
    """The MPI entry points whose slots in libpetsc were rewritten."""
    events: tuple[str, ...] = ()
    """The PETSc functions whose slots were rewritten to time them (``--events``)."""

    def totals_now(self) -> tuple[float, float]:
        values = (ctypes.c_double * 2).from_address(self.totals)
        return float(values[0]), float(values[1])

    def by_entry(self) -> dict[str, tuple[float, float]]:
        """Seconds counted and calls made so far, per entry point rewritten."""
        out = (ctypes.c_double * 2)()
        found: dict[str, tuple[float, float]] = {}
        for e in range(self.lib.ksptrace_wait_entries()):
            name = self.lib.ksptrace_wait_name(e).decode()
            if name in self.entry_points:
                self.lib.ksptrace_wait_entry(e, out)
                found[name] = (float(out[0]), float(out[1]))
        return found


    def spans(self) -> np.ndarray:
        """A copy of the event spans so far: float64 [n, 3] (start, end, kind)."""
        start, dropped = ctypes.c_void_p(), ctypes.c_double()
        count = int(self.lib.ksptrace_events_spans(ctypes.byref(start), ctypes.byref(dropped)))
        if dropped.value:
            raise EnvironmentProblem(f"{dropped.value:.0f} event spans were lost for want of "
                                     "memory; run without --events")
        if count == 0 or not start.value:
            return np.zeros((0, 3))
        values = (ctypes.c_double * (3 * count)).from_address(start.value)
        return np.ctypeslib.as_array(values).reshape(count, 3).copy()

    def reset_spans(self) -> None:
        """Forget the event spans so far (those of the set-up and a warm-up solve)."""
        self.lib.ksptrace_events_reset()


def mode() -> str:
    """``auto``, ``on`` or ``off``, from :data:`WAITS_ENV`."""
    value = os.environ.get(WAITS_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "on", "off"):
        raise EnvironmentProblem(f"{WAITS_ENV}={value!r} is not a setting; use auto, on or off")
    return value


def _declare(lib: ctypes.CDLL) -> None:
    lib.ksptrace_wait_install.restype = ctypes.c_int
    lib.ksptrace_wait_install.argtypes = [ctypes.c_char_p, _vp, ctypes.c_long,
                                          ctypes.POINTER(ctypes.c_uint)]
    lib.ksptrace_wait_entries.restype = ctypes.c_int
    lib.ksptrace_wait_entries.argtypes = []
    lib.ksptrace_wait_name.restype = ctypes.c_char_p
    lib.ksptrace_wait_name.argtypes = [ctypes.c_int]
    lib.ksptrace_wait_entry.restype = None
    lib.ksptrace_wait_entry.argtypes = [ctypes.c_int, _vp]
    lib.ksptrace_wait_totals.restype = _vp
    lib.ksptrace_wait_totals.argtypes = []
    lib.ksptrace_events_enable.restype = None
    lib.ksptrace_events_enable.argtypes = [ctypes.c_int]
    lib.ksptrace_events_spans.restype = ctypes.c_long
    lib.ksptrace_events_spans.argtypes = [ctypes.POINTER(_vp), ctypes.POINTER(ctypes.c_double)]
    lib.ksptrace_events_reset.restype = None
    lib.ksptrace_events_reset.argtypes = []


def load() -> tuple[ctypes.CDLL, Path] | str:
    """The interposer's library, built when missing; or why it cannot be had."""
    flags = ["-O2", "-fPIC", "-shared", *native.extra_flags()]
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        return f"cannot read {SOURCE}: {exc.strerror or exc}"
    key = hashlib.sha256(source + "\0".join([*flags, platform.machine()]).encode())
    return native.load_built(SOURCE, flags, f"mpi_wait-{key.hexdigest()[:16]}",
                             _declare, "the MPI wait interposer")


def install(clock: int, handle_bytes: int, match: str = LIBRARY_MATCH,
            events: bool = False) -> WaitCounter | str:
    """Rewrite the reduction slots (and with ``events`` those of PETSc's events) of the loaded
    libraries named like ``match``, the clock read at ``clock`` (an ``MPI_Wtime``'s address)
    and requests ``handle_bytes`` long; the counter, or why there is none."""
    loaded = _loaded()
    if isinstance(loaded, str):
        return loaded
    lib = loaded
    patched = ctypes.c_uint(0)
    lib.ksptrace_events_enable(int(events))
    found = lib.ksptrace_wait_install(match.encode(), clock, handle_bytes, ctypes.byref(patched))
    if found == -1:
        return f"a PLT slot of {match} could not be made writable"
    if found == -2:
        return f"an MPI entry point {match} calls was not found in the loaded libraries"
    rewritten = [lib.ksptrace_wait_name(e).decode() for e in range(lib.ksptrace_wait_entries())
                 if patched.value >> e & 1]
    names = tuple(n for n in rewritten if n.startswith("MPI_"))
    if not names:
        return f"no loaded library named like {match!r} calls an MPI reduction through its PLT"
    timed = tuple(n for n in rewritten if not n.startswith("MPI_"))
    if events and not timed:
        return f"no loaded library named like {match!r} calls MatMult or PCApply through its PLT"
    totals = lib.ksptrace_wait_totals()
    assert totals is not None
    return WaitCounter(lib, int(totals), names, timed)


@functools.cache
def _loaded() -> ctypes.CDLL | str:
    found = load()
    return found if isinstance(found, str) else found[0]


@functools.cache
def _mpi_clock() -> tuple[int, int] | str:
    from mpi4py import MPI

    try:
        wtime = ctypes.cast(ctypes.CDLL(MPI.__file__).MPI_Wtime, _vp).value
    except (OSError, AttributeError) as exc:
        return f"MPI_Wtime not found through mpi4py ({exc})"
    assert wtime is not None
    return wtime, int(MPI._sizeof(MPI.Request))


def counter(events: bool = False) -> WaitCounter | None:
    """The wait counter for this process's libpetsc (petsc4py loaded), installed on first
    use; None when :data:`WAITS_ENV` is off, or (``auto``) when it cannot be installed: then
    :func:`why_none` says why. With ``events`` (``--events``) it times PETSc's events too, or
    raises EnvironmentProblem saying why it cannot."""
    wanted = mode()
    if wanted == "off":
        if events:
            raise EnvironmentProblem(f"--events needs the MPI interposer, which {WAITS_ENV}=off "
                                     f"turns off; unset {WAITS_ENV} or drop --events")
        _why[:] = [f"{WAITS_ENV}=off"]
        return None
    clock = _mpi_clock()
    found = clock if isinstance(clock, str) else install(*clock, events=events)
    if isinstance(found, str):
        if events:
            raise EnvironmentProblem(f"--events cannot time PETSc's events: {found}; drop "
                                     "--events")
        if wanted == "on":
            raise EnvironmentProblem(f"{WAITS_ENV}=on but MPI waits cannot be timed: {found}; "
                                     f"unset {WAITS_ENV} to run without them")
        _why[:] = [found]
        return None
    return found


_why: list[str] = []


def why_none() -> str:
    """Why the last :func:`counter` returned None."""
    return _why[0] if _why else "not asked"


def per_iteration(marks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each iteration's wait (seconds) and reductions from the monitor's marks [K+1, 2] (the
    running totals copied at each monitor call): float64 [K] and int64 [K]."""
    steps = np.diff(np.asarray(marks, dtype=np.float64), axis=0)
    return steps[:, 0], np.rint(steps[:, 1]).astype(np.int64)
