"""PLogP's timed exchanges in C (``plogp_kernel.c``), and which path times them.

Timed through mpi4py, every MPI_Send and MPI_Recv carries the interpreter's call (0.5-0.7 us
here, against an o_s of about 2 us), and that call's jitter moved a whole run's small-message
o_s by 12-18 % (issue 54). The C kernel reads the clock around the MPI calls only; it is built
and loaded like the back-to-back kernel (:func:`ksptrace.collectives.kernel.build`: the MPI
functions taken from the library mpi4py loaded, a private cache folder, the digest checked
before each load).

:data:`TIMING_ENV` chooses the path: ``auto`` (default) the C kernel where it can be built on
every rank, else the Python path, saying why; ``c`` the kernel or an error; ``python`` the
Python path (kept as the fallback where there is no C compiler, and for comparison).
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.collectives import kernel
from ksptrace.errors import EnvironmentProblem

SOURCE = Path(__file__).with_name("plogp_kernel.c")
TIMING_ENV = "KSPTRACE_PLOGP_TIMING"
"""``auto`` (default): the C kernel where every rank has it; ``c``: it or an error; ``python``."""
TIMINGS = ("auto", "c", "python")
STATUS_BYTES = 256
"""Room the kernel keeps for an MPI_Status (``STATUS_BYTES`` in plogp_kernel.c)."""
_FUNCTIONS = ("MPI_Send", "MPI_Recv", "MPI_Iprobe", "MPI_Barrier", "MPI_Wtime")


def wanted() -> str:
    """``auto``, ``c`` or ``python``, from :data:`TIMING_ENV`."""
    value = os.environ.get(TIMING_ENV, "auto").strip().lower() or "auto"
    if value not in TIMINGS:
        raise EnvironmentProblem(f"{TIMING_ENV}={value!r} is not a timing path; use "
                                 + ", ".join(TIMINGS))
    return value


def _context_type(handle: Any) -> type[ctypes.Structure]:
    vp = ctypes.c_void_p

    class Context(ctypes.Structure):  # struct ksptrace_mpi
        _fields_ = [("send", vp), ("recv", vp), ("iprobe", vp), ("barrier", vp),
                    ("wtime", vp), ("comm", handle), ("byte", handle), ("peer", ctypes.c_int)]

    return Context


def _declare(lib: ctypes.CDLL, handle: Any) -> None:
    vp, i, n, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_double
    signatures = {"ksptrace_plogp_round_trips": [vp, vp, vp, i, i, n, vp],
                  "ksptrace_plogp_send": [vp, vp, vp, i, i, vp],
                  "ksptrace_plogp_recv": [vp, vp, vp, i, i, d, vp],
                  "ksptrace_plogp_train": [vp, vp, vp, i, i, n, vp]}
    for name, args in signatures.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = ctypes.c_int, args


@dataclass(frozen=True)
class Library:
    lib: ctypes.CDLL
    handle: Any
    """The ctypes type of the MPI library's handles."""
    functions: tuple[int, ...]
    """Addresses of MPI_Send, MPI_Recv, MPI_Iprobe, MPI_Barrier, MPI_Wtime (mpi4py's MPI)."""


@functools.cache
def load() -> Library | str:
    """The kernel, built when missing, or why it cannot be had."""
    from mpi4py import MPI

    if MPI._sizeof(MPI.Status) > STATUS_BYTES:
        return f"this MPI's MPI_Status has {MPI._sizeof(MPI.Status)} bytes, more than the C " \
               f"kernel keeps ({STATUS_BYTES})"
    built = kernel.build(SOURCE, _declare, "the C PLogP kernel")
    if isinstance(built, str):
        return built
    functions = kernel.mpi_functions(_FUNCTIONS)
    return functions if isinstance(functions, str) else Library(built[0], built[1], functions)


class Exchanges:
    """The kernel bound to a two-rank communicator: one barrier-started exchange per call, on
    both ranks, with the clock read in C. Buffers are uint8 arrays, contiguous."""

    def __init__(self, found: Library, comm: Any) -> None:
        from mpi4py import MPI

        self.lib = found.lib
        send, recv, iprobe, barrier, wtime = found.functions
        self.context = _context_type(found.handle)(
            send, recv, iprobe, barrier, wtime, MPI._handleof(comm), MPI._handleof(MPI.BYTE),
            1 - comm.Get_rank())
        self.ref = ctypes.byref(self.context)
        self.out = np.empty(64)

    def _done(self, rc: int, what: str) -> None:
        if rc != 0:
            raise EnvironmentProblem(f"{what} failed in the C PLogP kernel (MPI error code "
                                     f"{rc})")

    def round_trips(self, send: np.ndarray, recv: np.ndarray, mine: bool,
                    count: int) -> list[float]:
        """``count`` ping-pongs after one barrier, each timed (on the measuring rank)."""
        out = self.out if count <= self.out.size else np.empty(count)
        rc = self.lib.ksptrace_plogp_round_trips(self.ref, send.ctypes.data, recv.ctypes.data,
                                                 send.size, int(mine), count, out.ctypes.data)
        self._done(rc, "a round trip")
        return [float(x) for x in out[:count]]

    def send_overhead(self, send: np.ndarray, recv: np.ndarray, mine: bool) -> float:
        rc = self.lib.ksptrace_plogp_send(self.ref, send.ctypes.data, recv.ctypes.data,
                                          send.size, int(mine), self.out.ctypes.data)
        self._done(rc, "a send")
        return float(self.out[0]) if mine else 0.0

    def recv_overhead(self, send: np.ndarray, recv: np.ndarray, mine: bool,
                      wait: float) -> float:
        rc = self.lib.ksptrace_plogp_recv(self.ref, send.ctypes.data, recv.ctypes.data,
                                          send.size, int(mine), wait, self.out.ctypes.data)
        self._done(rc, "a receive")
        return float(self.out[0]) if mine else 0.0

    def train(self, send: np.ndarray, recv: np.ndarray, mine: bool, count: int) -> float:
        rc = self.lib.ksptrace_plogp_train(self.ref, send.ctypes.data, recv.ctypes.data,
                                           send.size, int(mine), count, self.out.ctypes.data)
        self._done(rc, "a train")
        return float(self.out[0])
