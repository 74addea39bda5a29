"""The collectives ksptrace times: buffers, the call, and a check of the values it produced.

Each operation is prepared once per message size: buffers are allocated and filled with a
pattern whose result every rank can compute, so that each repetition's values are checked (a
wrong result is an error, not a timing). ``reset`` refills the output with a sentinel before
each repetition, outside the timed region, so a collective that silently did nothing fails.

Reductions use float64 with small integer values (sums are exact) when the message size is a
multiple of 8 bytes, and unsigned bytes otherwise (MPI_SUM on MPI_UNSIGNED_CHAR wraps modulo
256, as numpy's uint8 does). Rooted operations use root 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksptrace.collectives.params import OPERATIONS
from ksptrace.collectives.patterns import (
    CHECK_BYTES,
    byte_pattern,
    byte_period,
    first_difference,
    tile_into,
    tiled,
)

SENTINEL = 255
"""Byte written into outputs before each repetition; no pattern below produces it."""


@dataclass(frozen=True)
class Prepared:
    """One operation at one message size, ready to run."""

    call: Callable[[], Any]
    """The collective (with its Wait, for a non-blocking one): what is timed."""
    reset: Callable[[], None]
    check: Callable[[], str | None]
    """None when the last call's output is right, else what is wrong."""
    start: Callable[[], Any] | None = None
    """A non-blocking operation's start alone: returns the request (``call`` also waits)."""
    buffers: tuple[np.ndarray, np.ndarray] | None = None
    """A reduction's send and receive buffers (what the C kernel is handed)."""


def buffer_bytes(operation: str, nbytes: int, nprocs: int) -> int:
    """Peak bytes one rank allocates for ``operation`` at ``nbytes`` (root's share, the
    largest): its buffers, plus the bounded temporary of the check."""
    if operation == "barrier":
        return 0
    if operation == "plogp":
        return 3 * nbytes + CHECK_BYTES  # send, receive, expected
    if operation in ("gather", "allgather"):
        return nbytes * (2 * nprocs + 1) + CHECK_BYTES  # send, everyone's, expected everyone's
    if operation in ("allreduce", "iallreduce", "iallreduce_overlap", "reduce"):
        return 3 * nbytes + CHECK_BYTES  # send, receive, expected
    return 2 * nbytes + CHECK_BYTES  # bcast: buffer, expected


def _pattern(nbytes: int, seed: int) -> np.ndarray:
    return byte_pattern(nbytes, 31, 7 + 13 * seed)


def _reduction_buffers(nbytes: int, rank: int, nprocs: int) -> tuple[np.ndarray, ...]:
    """Send, receive and expected buffers: element i's value is a function of i % 7 alone,
    so each is one period of 7 computed and tiled."""
    if nbytes % 8 == 0:
        base = np.arange(7).astype(np.float64)
        send = tiled(base + (rank + 1), nbytes // 8)
        expected = tiled(base * nprocs + nprocs * (nprocs + 1) / 2, nbytes // 8)
    else:
        small = np.arange(7, dtype=np.int64)
        send = tiled((small + rank + 1).astype(np.uint8), nbytes)
        expected = tiled(((small * nprocs + nprocs * (nprocs + 1) // 2) % 256).astype(np.uint8),
                         nbytes)
    return send, np.empty_like(send), expected


def _mismatch(got: np.ndarray, expected: np.ndarray, what: str) -> str | None:
    first = first_difference(got, expected)
    if first is None:
        return None
    return (f"{what} returned wrong values: element {first} is {got[first]!r}, expected "
            f"{expected[first]!r}")


def _filler(buf: np.ndarray) -> Callable[[], None]:
    raw = buf.view(np.uint8)
    return lambda: raw.fill(SENTINEL)


def _nothing() -> None:
    return None


def prepare(operation: str, comm: Any, nbytes: int) -> Prepared:
    """Collective-free: allocate and fill ``operation``'s buffers for ``nbytes`` on this rank."""
    from mpi4py import MPI

    rank, nprocs = comm.Get_rank(), comm.Get_size()
    if operation == "barrier":
        return Prepared(comm.Barrier, _nothing, _nothing)
    if operation in ("allreduce", "iallreduce", "iallreduce_overlap", "reduce"):
        send, recv, expected = _reduction_buffers(nbytes, rank, nprocs)
        start: Callable[[], Any] | None = None
        if operation == "allreduce":
            call: Callable[[], Any] = lambda: comm.Allreduce(send, recv, MPI.SUM)  # noqa: E731
        elif operation == "reduce":
            call = lambda: comm.Reduce(send, recv, MPI.SUM, 0)  # noqa: E731
        else:
            start = lambda: comm.Iallreduce(send, recv, MPI.SUM)  # noqa: E731
            call = lambda: start().Wait()  # noqa: E731
        checks = rank == 0 or operation != "reduce"
        return Prepared(call, _filler(recv), (lambda: _mismatch(recv, expected, operation))
                        if checks else _nothing, start, (send, recv))
    if operation == "bcast":
        expected = _pattern(nbytes, 0)
        buf = expected.copy()
        reset = (lambda: None) if rank == 0 else _filler(buf)
        return Prepared(lambda: comm.Bcast(buf, 0), reset,
                        lambda: _mismatch(buf, expected, "bcast"))
    if operation in ("gather", "allgather"):
        send = _pattern(nbytes, rank)
        everyone = np.empty(nbytes * nprocs if rank == 0 or operation == "allgather" else 0,
                            np.uint8)
        for r in range(nprocs if everyone.size else 0):  # in place: no copy per rank
            tile_into(everyone[r * nbytes:(r + 1) * nbytes], byte_period(31, 7 + 13 * r))
        recv = np.empty_like(everyone)
        if operation == "gather":
            call = lambda: comm.Gather(send, recv if rank == 0 else None, 0)  # noqa: E731
        else:
            call = lambda: comm.Allgather(send, recv)  # noqa: E731
        return Prepared(call, _filler(recv), lambda: _mismatch(recv, everyone, operation))
    raise ValueError(f"unknown operation {operation!r}; valid: {', '.join(OPERATIONS)}")


@dataclass(frozen=True)
class Compute:
    """Local work of about ``target`` seconds, in ``chunks`` pieces with an MPI_Test between."""

    units: int
    """Kernel calls that make up the work (calibrated)."""
    chunks: int

    def run(self, request: Any | None) -> None:
        per = max(1, self.units // self.chunks)
        done = 0
        while done < self.units:
            _kernel(min(per, self.units - done))
            done += per
            if request is not None:
                request.Test()


_WORK = np.ones(4096)


def _kernel(calls: int) -> None:
    for _ in range(calls):
        np.multiply(_WORK, 1.0, out=_WORK)


def calibrate(target_seconds: float, chunks: int) -> Compute:
    """The number of kernel calls that take ``target_seconds`` on this rank (measured)."""
    if target_seconds <= 0:
        return Compute(0, max(1, chunks))
    _kernel(50)
    t0 = time.perf_counter()
    _kernel(500)
    per_call = max((time.perf_counter() - t0) / 500, 1e-9)
    return Compute(max(1, round(target_seconds / per_call)), max(1, chunks))


REDUCING = ("allreduce", "iallreduce", "iallreduce_overlap", "reduce")


def local_reduce_seconds_per_byte(nbytes: int = 1 << 20, tries: int = 5) -> float:
    """gamma of the Hockney model on this rank: the fastest of ``tries`` float64 sums of two
    ``nbytes`` arrays (what MPI_SUM does per byte it receives), per byte."""
    a = np.ones(max(1, nbytes // 8))
    b = np.ones_like(a)
    best = np.inf
    for _ in range(tries):
        t0 = time.perf_counter()
        np.add(a, b, out=a)
        best = min(best, time.perf_counter() - t0)
    return float(best / a.nbytes)
