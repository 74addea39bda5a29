"""How the collectives tables name a trace's method and its timing mode."""

from __future__ import annotations

from ksptrace.trace.collectives import CollectiveTrace


def label(t: CollectiveTrace) -> str:
    """A trace's method label: the algorithm, its segment size, its MPI_Test calls and its
    timing mode where they apply (``segmented_ring/seg8192``, ``default/back-to-back``)."""
    seg = int(t.attrs.get("segment_bytes", 0) or 0)
    tests = int(t.attrs.get("test_calls", 0) or 0) if t.comm_seconds is not None else 0
    back = "/" + BACK_TO_BACK if t.attrs.get("timing_mode") == BACK_TO_BACK else ""
    return (t.algorithm + (f"/seg{seg}" if seg else "") + (f"/test{tests}" if tests else "")
            + back)


BACK_TO_BACK = "back-to-back"
"""The timing mode of runs that time N calls between two clock reads (the standard
benchmarks' figure); the others time each call between barriers (what an iteration pays)."""


def cell_group(t: CollectiveTrace) -> str:
    """The group of best-algorithm cells a trace's times compete in: its operation, and for
    back-to-back times their own group (``allreduce (back-to-back)``), never the per-call
    cells (issue 66: back-to-back runs, whose calls overlap, took per-call cells)."""
    back = t.attrs.get("timing_mode") == BACK_TO_BACK
    return f"{t.operation} ({BACK_TO_BACK})" if back else t.operation


def timing_of(t: CollectiveTrace) -> str:
    """What a trace's times are, in words for the curves table."""
    if t.attrs.get("timing_mode") == BACK_TO_BACK:
        return f"back-to-back ({int(t.attrs.get('calls_per_repetition', 1) or 1)} calls)"
    return "per call (barriers)"


TIMING_NOTE = ("timing: 'per call (barriers)' is one call between barriers, what a Krylov "
               "iteration pays; 'back-to-back (N calls)' is N calls between two clock reads "
               "per rank, over N (the standard benchmarks' figure, lower: calls overlap)")
