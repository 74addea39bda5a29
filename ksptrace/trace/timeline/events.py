"""The events of a timeline, as Chrome trace-event JSON text, from one rank's arrays.

Pure: numpy rows in, JSON lines out; no file is opened (:mod:`.stream` does that). The format
is the trace-event format of Chrome's ``about:tracing`` that Perfetto also opens: complete
events (``"ph": "X"``, a start ``ts`` and a duration ``dur`` in microseconds) nest by time on
one track, a track is a thread (``tid``) of a process (``pid``), and metadata events
(``"ph": "M"``) name them. Here a process is a node and a thread a rank; on each rank's track:

- one slice per solve (``KSPSolve``), from its start (the set-up before the first monitor call
  is placed by its measured time: the rank's KSPSolve time minus the span of its monitor
  calls) to its last monitor call, with a child slice ``set-up`` for that first part;
- one slice per iteration k, ``stamps[k-1]`` to ``stamps[k]``, its wait, reductions and
  detour in its ``args``;
- inside it, a slice ``wait in MPI reductions`` as long as the iteration's total wait, drawn
  at the iteration's end: the trace holds each iteration's total, not when each reduction
  happened (a GMRES iteration's reductions do end it);
- with ``--events`` (``event_seconds``), inside it slices ``MatMult`` and ``PCApply`` back
  to back from the iteration's start and ``VecMDot + VecNorm + VecDot`` ending at its end
  (around the wait, which happens inside them), each as long as the iteration's total in
  it: the order of a GMRES iteration, not the moments of each call, which are not recorded;
  a slice that would overlap the next is cut at it (its ``args`` keep the total);
- an instant event ``detour`` at the iteration's start where noise was injected (when in the
  iteration the preconditioner spun it is not recorded).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import UsageError

WAIT_SLICE = "wait in MPI reductions"
WAIT_PLACEMENT = ("each iteration's total time inside MPI reductions, drawn at the end of the "
                  "iteration (when each reduction happened is not recorded)")
EVENT_PLACEMENT = ("each iteration's total time in MatMult and PCApply, back to back from its "
                   "start, and in VecMDot + VecNorm + VecDot, ending at its end (when each "
                   "call happened is not recorded)")
EVENT_NAMES = ("MatMult", "PCApply", "VecMDot + VecNorm + VecDot")
"""The slice of each kind of ``event_seconds``, in its order."""
CLOCKS = ("each rank's MPI_Wtime minus the earliest time drawn; ranks on different nodes are "
          "not aligned by any clock synchronisation")


@dataclass(frozen=True)
class Window:
    """A half-open range ``[start, stop)`` of ranks or iterations."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def parse_window(text: str | None, first: int, end: int, what: str) -> Window:
    """``A:B`` (``A`` to ``B-1``), ``A:``, ``:B`` or ``A`` within ``[first, end)``; all of it
    for None. UsageError for anything else."""
    if text is None:
        return Window(first, end)
    parts = text.split(":")
    try:
        if len(parts) == 1:
            start = int(parts[0])
            stop = start + 1
        elif len(parts) == 2:
            start = int(parts[0]) if parts[0].strip() else first
            stop = int(parts[1]) if parts[1].strip() else end
        else:
            raise ValueError(text)
    except ValueError:
        raise UsageError(f"--{what} {text!r} is not a range; give A:B ({what} A to B-1), A: "
                         f"or :B") from None
    if not first <= start < stop <= end:
        raise UsageError(f"--{what} {text!r} is outside the trace's {what} {first} to "
                         f"{end - 1}, or empty; give a range within them")
    return Window(start, stop)


def iteration_ends(nstamps: int, offsets: np.ndarray | None) -> np.ndarray:
    """int64 [K]: the stamp column at which each iteration ends (iteration ``i``, 0-based over
    the trace's iterations, spans columns ``ends[i] - 1`` to ``ends[i]``): every column but
    each solve's first."""
    columns = np.arange(nstamps, dtype=np.int64)
    starts = np.zeros(1, dtype=np.int64) if offsets is None else np.asarray(offsets[:-1])
    return np.delete(columns, starts)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3f}"


def _slice(name: str, pid: int, tid: int, start: float, end: float, args: str) -> str:
    """A complete event from ``start`` to ``end`` (seconds): both are rounded to the
    nanosecond and the duration is their difference, so that slices that meet still meet."""
    ts, te = round(start * 1e6, 3), round(end * 1e6, 3)
    return (f'{{"name":{json.dumps(name)},"ph":"X","pid":{pid},"tid":{tid},"ts":{ts:.3f},'
            f'"dur":{max(te - ts, 0.0):.3f}{args}}}')


def track_names(rank: int, node: int, hostname: str, first_of_node: bool) -> Iterator[str]:
    """The metadata events naming a rank's track, and its node's when it is the first seen."""
    if first_of_node:
        label = json.dumps(f"node {node} ({hostname})")
        yield f'{{"name":"process_name","ph":"M","pid":{node},"tid":0,"args":{{"name":{label}}}}}'
        yield (f'{{"name":"process_sort_index","ph":"M","pid":{node},"tid":0,'
               f'"args":{{"sort_index":{node}}}}}')
    yield (f'{{"name":"thread_name","ph":"M","pid":{node},"tid":{rank},'
           f'"args":{{"name":"rank {rank}"}}}}')
    yield (f'{{"name":"thread_sort_index","ph":"M","pid":{node},"tid":{rank},'
           f'"args":{{"sort_index":{rank}}}}}')


@dataclass(frozen=True)
class SolveSpan:
    """One solve on one rank: where it starts (set-up included) and its monitor calls end."""

    index: int
    start: float
    first_stamp: float
    end: float


def solve_events(rank: int, node: int, t0: float, spans: list[SolveSpan]) -> Iterator[str]:
    """The parent slices of a rank's solves and their set-up children."""
    for s in spans:
        args = f',"args":{{"solve":{s.index}}}'
        yield _slice("KSPSolve", node, rank, s.start - t0, s.end - t0, args)
        yield _slice("set-up", node, rank, s.start - t0, s.first_stamp - t0,
                     ',"args":{"what":"KSPSolve before its first monitor call"}')


def event_slices(node: int, rank: int, k: int, start: float, end: float,
                 seconds: np.ndarray, wait: float = 0.0) -> Iterator[str]:
    """The ``--events`` slices of one iteration (times relative to the timeline's zero):
    MatMult then PCApply from ``start``, the vector reductions ending at ``end``; the first
    two end before the reductions and the ``wait`` slice (also ending at ``end``) begin, so
    that every slice nests."""
    matmult, pcapply, reduce = (float(v) for v in seconds[:3])
    tail = end - min(max(reduce, wait), end - start)
    cuts = [(EVENT_NAMES[0], start, min(start + matmult, tail), matmult)]
    cuts.append((EVENT_NAMES[1], cuts[0][2], min(cuts[0][2] + pcapply, tail), pcapply))
    cuts.append((EVENT_NAMES[2], end - min(reduce, end - start), end, reduce))
    for name, a, b, total in cuts:
        if total > 0:
            yield _slice(name, node, rank, a, b, f',"args":{{"k":{k},"total_us":{_us(total)}}}')


def iteration_events(rank: int, node: int, t0: float, first_iteration: int, starts: np.ndarray,
                     ends: np.ndarray, waits: np.ndarray | None, calls: np.ndarray | None,
                     detours: np.ndarray | None,
                     event_seconds: np.ndarray | None = None) -> Iterator[str]:
    """A rank's iteration slices (numbered from ``first_iteration``, 1-based), each with its
    wait slice, its event slices (``event_seconds`` [n, E], with ``--events``) and detour
    marker; ``starts``/``ends`` are its stamps around each iteration."""
    for j in range(starts.shape[0]):
        start, end = float(starts[j]), float(ends[j])
        k = first_iteration + j
        args = [f'"k":{k}']
        wait = None if waits is None else float(waits[j])
        if wait is not None and calls is not None:
            args += [f'"wait_us":{_us(wait)}', f'"mpi_calls":{int(calls[j])}']
        detour = 0.0 if detours is None else float(detours[j])
        if detour > 0:
            args.append(f'"detour_us":{_us(detour)}')
        yield _slice(f"iteration {k}", node, rank, start - t0, end - t0,
                     ',"args":{' + ",".join(args) + "}")
        if event_seconds is not None:
            yield from event_slices(node, rank, k, start - t0, end - t0, event_seconds[j],
                                    wait or 0.0)
        if wait:
            shown = min(wait, end - start)
            n = 0 if calls is None else int(calls[j])
            yield _slice(WAIT_SLICE, node, rank, end - shown - t0, end - t0,
                         f',"args":{{"k":{k},"mpi_calls":{n}}}')
        if detour > 0:
            yield (f'{{"name":"detour","ph":"i","s":"t","pid":{node},"tid":{rank},'
                   f'"ts":{_us(start - t0)},"args":{{"k":{k},"seconds":{detour!r}}}}}')
