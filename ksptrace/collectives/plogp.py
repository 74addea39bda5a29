"""PLogP's parameters measured between two ranks (Kielmann, Bal and Verstoep, 2000).

PLogP describes a point-to-point message of m bytes by an end-to-end latency L and four
functions of m: the sender's overhead o_s(m) (the time its send call keeps the CPU), the
receiver's overhead o_r(m) (the time a receive of an already-arrived message takes), and the gap
g(m) (the interval between consecutive messages a sender can sustain; g >= o_s, o_r). A round
trip takes RTT(m) = 2 (L + g(m)). With rank ``a`` measuring and ``b`` its peer, every timed
exchange starts after a barrier:

- round trip: ``a`` sends m bytes, ``b`` returns them; RTT is ``a``'s elapsed time. The
  trips of a round follow one another after one barrier (a ping-pong): timed each after a
  barrier of its own, the trips from 4 to 16 KiB took either about 2.2 or about 4 us, by how
  late the peer left the barrier, and their median jumped between the two from run to run;
- o_s(m): ``a`` times its send while ``b`` receives;
- o_r(m): ``b`` sends and then stays out of MPI for 2 RTT + 40 us (not polling the transport in
  the next barrier while the receive is timed); ``a`` waits 2 RTT + 20 us and
  then until MPI_Iprobe sees the message
  (a sender descheduled on a shared machine is late, and its lateness is no overhead), then
  times its receive (at rendezvous sizes this includes the transfer, as PLogP's o_r does);
- g(m): ``a`` sends trains of n back-to-back messages, n in :data:`TRAINS`, each train closed
  by a zero-byte acknowledgement from ``b``. A train takes ``c + n g`` once it saturates the
  path (c: the latency and the acknowledgement), so g is the slope of the train's time over n
  (each length timed :data:`INNER` times, its median kept): the median of the slopes between
  every two train lengths (Theil-Sen), which one disturbed length does not move. The shortest
  train has 2 messages: a single message is not yet saturated (its send returns before the
  path is busy). A ratio of one long train to one short (the earlier method) rests on two
  single timings and varied by 2x from run to run at small sizes.

**Rounds.** A repetition is a round over every message size, in an order shuffled per round
(the same on both ranks), so a burst of foreign load on a shared machine lands on one round
of all sizes rather than on all repetitions of a few sizes; the rounds' medians per size are
then comparable with one another. In each round and size, the round trip and o_s are timed
:data:`INNER` times, o_r :data:`RECV_INNER` times, one message at a time, and the round keeps
their median (a burst median: a
rank descheduled for one message does not move it). Both ranks take the measuring role in turn,
so every per-rank array of the trace holds that rank's own measurements. Every received message
is checked against the sender's pattern (after the clock is read).

**In C.** The timed exchanges run in C (:mod:`ksptrace.collectives.plogp_kernel`): each call is
one barrier-started exchange, its clock read around the MPI calls only, so an MPI_Send through
mpi4py's interpreter call (0.5-0.7 us, jittering, beside an o_s of about 2 us) is not what is
timed. Python drives the rounds, sizes and roles, checks every payload between the calls and
keeps the medians. Where the kernel cannot be built on every rank (no C compiler), the same
exchanges are timed through mpi4py; the result says which path timed it and why
(:attr:`PLogPTimes.timing`, the trace's ``plogp_timing``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksptrace.collectives import plogp_kernel
from ksptrace.collectives.patterns import byte_pattern, first_difference
from ksptrace.errors import EnvironmentProblem

TRAINS = (2, 4, 8, 16)
"""Messages in the trains whose times give the gap (their slope over the train length)."""
INNER = 5
"""Round trips, sends, receives and trains of each length timed one by one per round and size;
the round keeps their median (a rank descheduled during one of them does not move it)."""
RECV_INNER = 15
"""Receives timed one by one per round and size for o_r (its median kept). o_r below 4 KiB is
about 0.13 us, and single receives sit at about 0.11 or 0.2-0.3 us: with 5, o_r agreed within
10 % in every pair of 10 runs at 19 of 76 sizes and with 15 at 59 (runs alternating); in a
second block, with 15 at 60 and with 31 at 64 (quiet machine, 2026-11-28; a run took 7.2, 10.2
and 15.9 s)."""
SETTLE = 20e-6
"""Seconds beyond two round trips that the receiver waits before timing o_r."""
QUIET = 20e-6
"""Seconds beyond the receiver's wait that the sender of o_r's message stays out of MPI (spins
on its clock) instead of entering the next barrier: a peer polling the shared-memory transport
while the receive is timed may perturb it; the evidence is weak (plogp_kernel.c says how weak)."""
PARTS = ("send_overhead_seconds", "recv_overhead_seconds", "gap_seconds")
"""The per-size measurements a PLogP trace holds beside ``seconds`` (= RTT / 2)."""


@dataclass(frozen=True)
class PLogPTimes:
    """One rank's measurements as the measuring side, [M, R] each (size, round)."""

    half_round_trip: np.ndarray
    send_overhead: np.ndarray
    recv_overhead: np.ndarray
    gap: np.ndarray
    timing: str = "python"
    """Which path timed the exchanges: ``c`` (the kernel) or ``python`` (through mpi4py)."""
    timing_note: str = ""
    """Why the Python path timed them (empty when C did)."""


def _pattern(nbytes: int, rank: int) -> np.ndarray:
    """What ``rank`` sends; a shorter message's pattern is a prefix of a longer one's."""
    return byte_pattern(nbytes, 7, 13 * rank + 1)


def train_slope(lengths: Sequence[int], seconds: Sequence[float]) -> float:
    """Theil-Sen slope of a train's time over its length: the median of the pairwise slopes."""
    n = np.asarray(lengths, np.float64)
    t = np.asarray(seconds, np.float64)
    i, j = np.triu_indices(n.size, 1)
    return float(np.median((t[j] - t[i]) / (n[j] - n[i])))


def size_order(sizes: int, round_index: int) -> np.ndarray:
    """The order of the sizes in one round: a permutation both ranks compute alike."""
    return np.random.default_rng(round_index).permutation(sizes)


def _spin(until: float, wtime: Callable[[], float]) -> None:
    while wtime() < until:
        pass


class _Pair:
    """Both ranks' side of the timed exchanges at one size (buffers are prefixes of the
    largest size's: the patterns are periodic from index 0)."""

    def __init__(self, comm: Any, send: np.ndarray, recv: np.ndarray, expected: np.ndarray,
                 wtime: Callable[[], float]) -> None:
        self.comm, self.send, self.recv, self.expected = comm, send, recv, expected
        self.wtime, self.peer = wtime, 1 - comm.Get_rank()
        self.ack = np.empty(0, np.uint8)
        self.wrong: str | None = None

    def _received(self) -> None:
        if self.wrong is None and first_difference(self.recv, self.expected) is not None:
            self.wrong = f"the {self.send.size} B message from rank {self.peer} arrived altered"
        self.recv.fill(0)

    def round_trips(self, mine: bool, count: int) -> list[float]:
        """``count`` ping-pongs in a row after one barrier, each timed on its own."""
        comm, peer = self.comm, self.peer
        comm.Barrier()
        out = []
        for _ in range(count):
            t0 = self.wtime()
            if mine:
                comm.Send(self.send, peer)
                comm.Recv(self.recv, peer)
            else:
                comm.Recv(self.recv, peer)
                comm.Send(self.send, peer)
            out.append(self.wtime() - t0)
        self._received()  # after the clock reads: the check is no part of a trip
        return out

    def send_overhead(self, mine: bool) -> float:
        self.comm.Barrier()
        if not mine:
            self.comm.Recv(self.recv, self.peer)
            self._received()
            return 0.0
        t0 = self.wtime()
        self.comm.Send(self.send, self.peer)
        return self.wtime() - t0

    def recv_overhead(self, mine: bool, rtt: float) -> float:
        comm = self.comm
        comm.Barrier()
        if not mine:  # then out of MPI while the receive is timed (see QUIET)
            comm.Send(self.send, self.peer)
            _spin(self.wtime() + 2 * rtt + SETTLE + QUIET, self.wtime)
            return 0.0
        _spin(self.wtime() + 2 * rtt + SETTLE, self.wtime)
        while not comm.Iprobe(source=self.peer):  # a descheduled sender is late
            pass
        t0 = self.wtime()
        comm.Recv(self.recv, self.peer)
        elapsed = self.wtime() - t0
        self._received()
        return elapsed

    def train(self, mine: bool, count: int) -> float:
        comm, peer = self.comm, self.peer
        comm.Barrier()
        t0 = self.wtime()
        if mine:
            for _ in range(count):
                comm.Send(self.send, peer)
            comm.Recv(self.ack, peer)
        else:
            for _ in range(count):
                comm.Recv(self.recv, peer)
            comm.Send(self.ack, peer)
        elapsed = self.wtime() - t0
        if not mine:
            self._received()
        return elapsed


class _CPair(_Pair):
    """The same exchanges timed in C (:class:`plogp_kernel.Exchanges`); the checks stay here."""

    def __init__(self, comm: Any, send: np.ndarray, recv: np.ndarray, expected: np.ndarray,
                 wtime: Callable[[], float], exchanges: plogp_kernel.Exchanges) -> None:
        super().__init__(comm, send, recv, expected, wtime)
        self.c = exchanges

    def round_trips(self, mine: bool, count: int) -> list[float]:
        out = self.c.round_trips(self.send, self.recv, mine, count)
        self._received()
        return out

    def send_overhead(self, mine: bool) -> float:
        elapsed = self.c.send_overhead(self.send, self.recv, mine)
        if not mine:
            self._received()
        return elapsed

    def recv_overhead(self, mine: bool, rtt: float) -> float:
        elapsed = self.c.recv_overhead(self.send, self.recv, mine, 2 * rtt + SETTLE)
        if mine:
            self._received()
        return elapsed

    def train(self, mine: bool, count: int) -> float:
        elapsed = self.c.train(self.send, self.recv, mine, count)
        if not mine:
            self._received()
        return elapsed


def timing_path(comm: Any, wtime: Callable[[], float]
                ) -> tuple[plogp_kernel.Exchanges | None, str]:
    """Collective: the C exchanges when every rank has the kernel, else None and why the
    Python path times (an EnvironmentProblem on every rank when ``KSPTRACE_PLOGP_TIMING=c``)."""
    from mpi4py import MPI

    wanted = plogp_kernel.wanted()
    found: plogp_kernel.Library | str
    if wanted == "python":
        found = f"{plogp_kernel.TIMING_ENV}=python"
    elif wtime is not MPI.Wtime:
        found = "the clock is not MPI.Wtime"
    else:
        found = plogp_kernel.load()
    whys = comm.allgather(found if isinstance(found, str) else "")
    why = "; ".join(f"rank {r}: {w}" for r, w in enumerate(whys) if w)
    if wanted == "python":
        return None, str(found)
    if why and wanted == "c":
        raise EnvironmentProblem(f"{plogp_kernel.TIMING_ENV}=c but the C PLogP kernel is "
                                 f"unavailable ({why}); install a C compiler (cc) or unset "
                                 f"{plogp_kernel.TIMING_ENV}")
    if why or isinstance(found, str):  # (found is a str only where why says so)
        return None, f"the C PLogP kernel is unavailable: {why}"
    return plogp_kernel.Exchanges(found, comm), ""


def _one(pair: _Pair, mine: bool, measurer: int) -> tuple[float, float, float, float]:
    """One round's RTT, o_s, o_r and g at one size (meaningful on the measuring rank)."""
    trips = pair.round_trips(mine, INNER)
    rtt = pair.comm.bcast(float(np.median(trips)), root=measurer)
    sends = [pair.send_overhead(mine) for _ in range(INNER)]
    recvs = [pair.recv_overhead(mine, rtt) for _ in range(RECV_INNER)]
    trains = np.array([[pair.train(mine, n) for n in TRAINS] for _ in range(INNER)])
    return (rtt, float(np.median(sends)), float(np.median(recvs)),
            train_slope(TRAINS, np.median(trains, axis=0)))


def time_plogp(comm: Any, sizes: Sequence[int], rounds: int, warmup: int,
               wtime: Callable[[], float], between: Callable[[int], None] | None = None
               ) -> tuple[PLogPTimes, str | None]:
    """Measure every size in each of ``warmup + rounds`` rounds on the two ranks of ``comm``
    (in C where :func:`timing_path` allows); the first ``warmup`` rounds are run and checked
    but not kept. Each round ends in a barrier, after which ``between(rounds done)`` runs
    (rank 0's estimate and progress lines, :mod:`ksptrace.collectives.eta`): outside every
    timed exchange, on both ranks."""
    rank = comm.Get_rank()
    largest = max(sizes)
    send, expected = _pattern(largest, rank), _pattern(largest, 1 - rank)
    recv = np.zeros(largest, np.uint8)
    exchanges, why = timing_path(comm, wtime)
    pairs = [_Pair(comm, send[:m], recv[:m], expected[:m], wtime) if exchanges is None
             else _CPair(comm, send[:m], recv[:m], expected[:m], wtime, exchanges)
             for m in sizes]
    kept = np.empty((4, len(sizes), rounds))
    for r in range(warmup + rounds):
        for j in size_order(len(sizes), r):
            for measurer in (0, 1):
                values = _one(pairs[j], rank == measurer, measurer)
                if rank == measurer and r >= warmup:
                    kept[:, j, r - warmup] = values
        comm.Barrier()  # the round is over on both ranks
        if between is not None:
            between(r + 1)
    wrong = next((p.wrong for p in pairs if p.wrong is not None), None)
    return PLogPTimes(kept[0] / 2, kept[1], kept[2], kept[3],
                      "python" if exchanges is None else "c", why), wrong
