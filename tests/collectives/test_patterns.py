"""Message patterns: the same values as ever, at the memory the check counts (issue 50).

``collectives --op plogp --max-bytes 1G --np 2`` passed the memory check (3 x 1 GiB a rank)
and then reached 11.4 GB on a rank: the patterns were computed over an int64 ``arange`` (16
bytes of temporaries per message byte). These tests measure the fill's peak with tracemalloc
on a few MiB (never a GiB) against what the check counts, and make the check refuse it."""

from __future__ import annotations

import sys
import tracemalloc
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ksptrace.cli import collectives as cli
from ksptrace.collectives import operations, patterns, plogp
from ksptrace.errors import UsageError

MiB = 1 << 20


def _old_bytes(nbytes: int, multiplier: int, offset: int) -> np.ndarray:
    """The patterns as they were first written: every fingerprint and check saw these."""
    return ((np.arange(nbytes, dtype=np.int64) * multiplier + offset) % 251).astype(np.uint8)


def _old_reduction(nbytes: int, rank: int, nprocs: int) -> tuple[np.ndarray, np.ndarray]:
    if nbytes % 8 == 0:
        base = (np.arange(nbytes // 8) % 7).astype(np.float64)
        return base + (rank + 1), base * nprocs + nprocs * (nprocs + 1) / 2
    small = (np.arange(nbytes) % 7).astype(np.int64)
    return ((small + rank + 1).astype(np.uint8),
            ((small * nprocs + nprocs * (nprocs + 1) // 2) % 256).astype(np.uint8))


@pytest.mark.parametrize("nbytes", [0, 1, 7, 250, 251, 252, 502, 503, 4096, 100_003])
def test_the_patterns_hold_the_values_they_always_held(nbytes: int) -> None:
    for seed in range(4):
        old = _old_bytes(nbytes, 31, 7 + 13 * seed)
        assert np.array_equal(operations._pattern(nbytes, seed), old)
        assert np.array_equal(plogp._pattern(nbytes, seed), _old_bytes(nbytes, 7, 13 * seed + 1))
    for size in (nbytes, 8 * nbytes):
        send, recv, expected = operations._reduction_buffers(size, 1, 3)
        old_send, old_expected = _old_reduction(size, 1, 3)
        assert send.dtype == old_send.dtype
        assert np.array_equal(send, old_send)
        assert np.array_equal(expected, old_expected)
        assert recv.shape == send.shape


def test_first_difference_finds_the_first_wrong_element_across_chunks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "CHUNK", 10)
    a = np.arange(95.0)
    assert patterns.first_difference(a, a.copy()) is None
    for wrong in (0, 9, 10, 94):
        b = a.copy()
        b[wrong] = -1
        b[-1] = -2
        assert patterns.first_difference(a, b) == wrong
    assert patterns.first_difference(np.array([np.nan]), np.array([np.nan])) == 0


def _peak(make: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        kept = make()
        return tracemalloc.get_traced_memory()[1] if kept is not None else 0
    finally:
        tracemalloc.stop()


class _Comm:
    """What ``prepare`` asks of a communicator before any collective runs."""

    def __init__(self, rank: int, size: int) -> None:
        self.rank, self.size = rank, size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size


@pytest.mark.parametrize(("op", "nbytes"), [("plogp", 32 * MiB), ("allreduce", 32 * MiB),
                                            ("allreduce", 32 * MiB - 1), ("bcast", 32 * MiB),
                                            ("allgather", 4 * MiB), ("gather", 4 * MiB)])
def test_the_fill_and_the_check_stay_within_what_the_memory_check_counts(
        monkeypatch: pytest.MonkeyPatch, op: str, nbytes: int) -> None:
    nprocs = 2 if op == "plogp" else 3
    monkeypatch.setitem(sys.modules, "mpi4py", types.SimpleNamespace(
        MPI=types.SimpleNamespace(SUM="sum")))  # no MPI: nothing here communicates

    def fill_and_check() -> object:
        if op == "plogp":  # a rank's send, expected and received buffers, and the check
            send, expected = plogp._pattern(nbytes, 0), plogp._pattern(nbytes, 1)
            recv = np.empty(nbytes, np.uint8)
            return (send, patterns.first_difference(recv, expected))
        ready = operations.prepare(op, _Comm(0, nprocs), nbytes)
        ready.reset()
        return (ready, ready.check())

    peak = _peak(fill_and_check)
    counted = operations.buffer_bytes(op, nbytes, nprocs)
    assert peak <= counted, (peak / nbytes, counted / nbytes)
    assert peak >= counted - patterns.CHECK_BYTES - MiB  # the count is not padded either


def test_the_memory_check_refuses_what_would_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    need = operations.buffer_bytes("plogp", 1 << 30, 2) * 2
    monkeypatch.setattr(cli, "available_bytes", lambda: int(need / cli.MEMORY_SHARE) + 1)
    cli.check_memory("plogp", 1 << 30, 2, 2)  # just fits
    monkeypatch.setattr(cli, "available_bytes", lambda: int(need / cli.MEMORY_SHARE) - MiB)
    with pytest.raises(UsageError, match=r"--max-bytes 1073741824 needs 6154 MiB of buffers "
                       "for plogp on 2 ranks here"):
        cli.check_memory("plogp", 1 << 30, 2, 2)
    # gather at the root holds every rank's message twice (received and expected)
    gather = operations.buffer_bytes("gather", 1 << 20, 4)
    assert gather >= 9 * (1 << 20)


def test_one_size_s_buffers_are_alive_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check counts one size's buffers: the sweep lets go of a size's before it fills the
    next one's (it held both: 1.5 times the largest size's at the end of the sweep)."""
    import gc
    import weakref
    from pathlib import Path

    from ksptrace.collectives import algorithms, bench

    alive: list[weakref.ref[Any]] = []
    largest: list[int] = []

    class Ready:
        pass

    def prepare(op: str, comm: object, nbytes: int) -> Ready:
        gc.collect()
        largest.append(sum(r() is not None for r in alive))
        ready = Ready()
        alive.append(weakref.ref(ready))
        return ready

    monkeypatch.setattr(bench, "prepare", prepare)
    monkeypatch.setattr(bench, "time_calls", lambda *a: (np.zeros(2), None))
    comm = types.SimpleNamespace(Get_rank=lambda: 0, Get_size=lambda: 1,
                                 allgather=lambda x: [x], bcast=lambda x, root=0: x)
    forcing = algorithms.default_forcing("openmpi", "allreduce")
    settings = bench.BenchSettings("allreduce", (8, 16, 32), 2, 0, forcing, Path("x.h5"))
    bench._measure(comm, settings, lambda: 0.0)
    assert largest == [0, 0, 0]
