"""PLogP's parameters measured between two ranks (Kielmann, Bal and Verstoep, 2000).

PLogP describes a point-to-point message of m bytes by an end-to-end latency L and four
functions of m: the sender's overhead o_s(m) (the time its send call keeps the CPU), the
receiver's overhead o_r(m) (the time a receive of an already-arrived message takes), and the gap
g(m) (the interval between consecutive messages a sender can sustain; g >= o_s, o_r). A round
trip takes RTT(m) = 2 (L + g(m)). Each repetition, with rank ``a`` measuring and ``b`` its peer,
barrier-separated:

- round trip: ``a`` sends m bytes, ``b`` returns them; RTT is ``a``'s elapsed time;
- o_s(m): ``a`` times its send while ``b`` receives;
- o_r(m): ``b`` sends; ``a`` waits 2 RTT + 20 us and then until MPI_Iprobe sees the message
  (a sender descheduled on a shared machine is late, and its lateness is no overhead), then
  times its receive (at rendezvous sizes this includes the transfer, as PLogP's o_r does);
- g(m): ``a`` sends one message and then a burst of BURST back to back, each followed by a
  zero-byte acknowledgement from ``b``; g = (T_burst - T_one) / (BURST - 1), which cancels the
  latency and the acknowledgement.

In each repetition the round trip, o_s and o_r are timed INNER times one message at a time and
the repetition keeps their median (a burst median: on a shared machine a rank descheduled for
one message does not move it). Both ranks take the measuring role in turn, so every per-rank
array of the trace holds that rank's own measurements. Every received message is checked
against the sender's pattern.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ksptrace.collectives.patterns import byte_pattern, first_difference

BURST = 16
"""Messages in the burst that measures the gap."""
INNER = 5
"""Round trips, sends and receives timed one by one in each repetition; the repetition keeps
their median (a rank descheduled during one of them does not move it)."""
SETTLE = 20e-6
"""Seconds beyond two round trips that the receiver waits before timing o_r."""
PARTS = ("send_overhead_seconds", "recv_overhead_seconds", "gap_seconds")
"""The per-size measurements a PLogP trace holds beside ``seconds`` (= RTT / 2)."""


@dataclass(frozen=True)
class PLogPTimes:
    """One rank's measurements at one message size, as the measuring side ([R] each)."""

    half_round_trip: np.ndarray
    send_overhead: np.ndarray
    recv_overhead: np.ndarray
    gap: np.ndarray


def _pattern(nbytes: int, rank: int) -> np.ndarray:
    return byte_pattern(nbytes, 7, 13 * rank + 1)


def _spin(until: float, wtime: Callable[[], float]) -> None:
    while wtime() < until:
        pass


def time_plogp(comm: Any, nbytes: int, repetitions: int, warmup: int,
               wtime: Callable[[], float]) -> tuple[PLogPTimes, str | None]:
    """Measure on ranks 0 and 1 of ``comm`` (which must have exactly two ranks)."""
    rank = comm.Get_rank()
    peer = 1 - rank
    send, expected = _pattern(nbytes, rank), _pattern(nbytes, peer)
    recv = np.empty(nbytes, np.uint8)
    ack = np.empty(0, np.uint8)
    wrong: str | None = None
    kept: dict[str, np.ndarray] = {k: np.empty(repetitions) for k in
                                   ("rtt", "o_s", "o_r", "g")}

    def received() -> None:
        nonlocal wrong
        if wrong is None and first_difference(recv, expected) is not None:
            wrong = f"the {nbytes} B message from rank {peer} arrived altered"
        recv.fill(0)

    for measurer in (0, 1):
        mine = rank == measurer
        for i in range(warmup + repetitions):
            trips, sends, recvs = (np.empty(INNER) for _ in range(3))
            for k in range(INNER):  # round trips
                comm.Barrier()
                t0 = wtime()
                if mine:
                    comm.Send(send, peer)
                    comm.Recv(recv, peer)
                else:
                    comm.Recv(recv, peer)
                    comm.Send(send, peer)
                trips[k] = wtime() - t0
                received()  # checked after the clock read: the check is no part of the trip
            rtt = comm.bcast(float(np.median(trips)), root=measurer)
            for k in range(INNER):  # o_s
                comm.Barrier()
                t0 = wtime()
                if mine:
                    comm.Send(send, peer)
                    sends[k] = wtime() - t0
                else:
                    comm.Recv(recv, peer)
                    received()
            for k in range(INNER):  # o_r: the message has arrived when the receive starts
                comm.Barrier()
                if mine:
                    _spin(wtime() + 2 * rtt + SETTLE, wtime)
                    while not comm.Iprobe(source=peer):  # a descheduled sender is late
                        pass
                    t0 = wtime()
                    comm.Recv(recv, peer)
                    recvs[k] = wtime() - t0
                    received()
                else:
                    comm.Send(send, peer)
            burst = []
            for count in (1, BURST):  # the gap
                comm.Barrier()
                t0 = wtime()
                if mine:
                    for _ in range(count):
                        comm.Send(send, peer)
                    comm.Recv(ack, peer)
                else:
                    for _ in range(count):
                        comm.Recv(recv, peer)
                    comm.Send(ack, peer)
                    received()
                burst.append(wtime() - t0)
            if mine and i >= warmup:
                k = i - warmup
                kept["rtt"][k], kept["o_s"][k] = rtt, float(np.median(sends))
                kept["o_r"][k] = float(np.median(recvs))
                kept["g"][k] = (burst[1] - burst[0]) / (BURST - 1)
    times = PLogPTimes(kept["rtt"] / 2, kept["o_s"], kept["o_r"], kept["g"])
    return times, wrong
