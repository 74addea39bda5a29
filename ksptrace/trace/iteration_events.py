"""Time in PETSc's main operations per rank and iteration (``--events``, issue 65). Pure.

A trace's optional dataset ``event_seconds`` [P, K, E] holds, per rank and iteration, the time
inside each kind of :data:`EVENTS`: ``MatMult``, ``PCApply``, and the vector reductions
``VecMDot``, ``VecNorm`` and ``VecDot`` together (``VecReduce``; with ``VecTDot`` and
``VecMTDot``, the dot products CG uses for real scalars, and the split phases pipelined methods
use: ``VecMDotBegin``/``End``, ``VecNormBegin``/``End``, ``VecDotBegin``/``End``). Each kind is
inclusive, as PETSc's event log times it: a call's whole time, its MPI wait included; a call
nested in another of the same kind counts once (the outer one), while a MatMult inside PCApply
counts in both. The harness records spans (start, end, kind) with the clock of the stamps
(:mod:`ksptrace.harness.monitoring.mpiwait`); :func:`per_iteration` sums them into the iterations
whose stamps bracket their start.
"""

from __future__ import annotations

import numpy as np

from ksptrace.errors import TraceError

EVENTS: tuple[str, ...] = ("MatMult", "PCApply", "VecReduce")
"""The kinds along the ``event`` axis, in order (``VecReduce``: VecMDot, VecNorm, VecDot,
VecTDot, VecMTDot and the Begin/End phases of VecMDot, VecNorm and VecDot)."""
DESCRIPTIONS: dict[str, str] = {
    "MatMult": "MatMult", "PCApply": "PCApply", "VecReduce": "VecMDot + VecNorm + VecDot",
}
SHARE_KEYS: dict[str, str] = {name: f"{name.lower()}_share" for name in EVENTS}
"""The summary figure of each kind (``ksptrace show``): its share of the iteration time."""


def check(values: np.ndarray, expected: tuple[int, int]) -> np.ndarray:
    """``values`` as a float64 [P, K, E] array; TraceError unless it has the shape
    ``expected`` + (E,) and holds finite times of at least zero."""
    arr = np.asarray(values, dtype=np.float64)
    want = (*expected, len(EVENTS))
    if arr.shape != want:
        raise TraceError(f"event_seconds has shape {arr.shape}, expected {want}")
    if not np.all(np.isfinite(arr)) or (arr.size and arr.min() < 0):
        raise TraceError("event_seconds holds negative or non-finite times")
    return arr


def per_iteration(stamps: np.ndarray, spans: np.ndarray,
                  offsets: np.ndarray | None = None) -> np.ndarray:
    """float64 [K, E]: the spans' durations summed per iteration and kind.

    ``stamps`` are one rank's monitor stamps (every solve's, back to back, solve s holding
    columns ``offsets[s]:offsets[s+1]``; one solve when ``offsets`` is None), ``spans`` rows of
    (start, end, kind index) on the same clock. A span belongs to the iteration between the
    stamps that bracket its start; spans before the first stamp, after the last, or between
    two solves (set-up, the program's own work) are left out."""
    stamps = np.asarray(stamps, dtype=np.float64)
    spans = np.asarray(spans, dtype=np.float64).reshape(-1, 3)
    intervals = max(stamps.size - 1, 0)
    where = np.arange(intervals)  # the iteration column of each interval between stamps
    if offsets is not None and len(offsets) > 2:  # the gaps between solves are none
        gaps = np.asarray(offsets)[1:-1] - 1
        where = where - np.searchsorted(gaps, where, side="right")
        where[gaps] = -1
    iterations = intervals - (0 if offsets is None else max(len(offsets) - 2, 0))
    if spans.size == 0 or stamps.size < 2:
        return np.zeros((iterations, len(EVENTS)))
    starts, ends = np.ascontiguousarray(spans[:, 0]), np.ascontiguousarray(spans[:, 1])
    k = np.searchsorted(stamps, starts, side="right") - 1
    kind = spans[:, 2].astype(np.int64)
    keep = (k >= 0) & (k < intervals) & (kind >= 0) & (kind < len(EVENTS))
    col = where[k[keep]]
    inside = col >= 0
    flat = col[inside] * len(EVENTS) + kind[keep][inside]  # bincount: np.add.at is ~50x slower
    seconds = np.clip(ends - starts, 0.0, None)[keep][inside]
    sums = np.bincount(flat, weights=seconds, minlength=iterations * len(EVENTS))
    return sums.reshape(iterations, len(EVENTS))


def shares(event_seconds: np.ndarray, iteration_seconds: np.ndarray) -> dict[str, float]:
    """Each kind's time over all ranks and iterations as a share of the iteration time, keyed
    by :data:`SHARE_KEYS` (NaN when the iterations took no time)."""
    total = float(np.sum(iteration_seconds))
    sums = np.asarray(event_seconds, dtype=np.float64).sum(axis=(0, 1))
    return {SHARE_KEYS[name]: float(v) / total if total > 0 else float("nan")
            for name, v in zip(EVENTS, sums, strict=True)}
