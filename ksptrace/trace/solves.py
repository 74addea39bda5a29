"""The solves of a trace of several (``ksptrace.record``), each as a trace of its own.

Pure: numpy arrays in, :class:`~ksptrace.trace.model.Trace` objects out.
"""

from __future__ import annotations

import numpy as np

from ksptrace.trace.model import Trace


def split(trace: Trace, pool: bool = False) -> tuple[Trace, ...]:
    """Each solve of a trace of several as a trace of its own (``trace`` alone otherwise).

    A solve's attributes say which it is (``solve``: its index), its length
    (``iterations``, also ``iterations_done``), its converged reason and its KSPSolve times;
    solves without an iteration are left out. With ``pool``, the solves of each length K
    make one trace instead: their iterations one after the other (each solve's call 0
    moved onto the previous solve's last stamp, so no gap between solves is timed), their
    KSPSolve times summed, and ``solve`` says ``"K=10 x 4"`` (4 solves of 10 iterations).
    Each part's ``setup_max`` is its own time outside its iterations (its KSPSolve time less
    the span of its stamps, summed over the solves pooled, the largest over ranks), never the
    trace's first solve's; it is left out when a rank's cannot be told. A ``ksptrace trace``
    trace's part has its own ``setup_seconds`` too (from ``setup_seconds_solves``).
    """
    if trace.solves is None:
        return (trace,)
    s = trace.solves
    lengths = s.iterations
    if not pool:
        groups = [[i] for i in range(s.count) if lengths[i] >= 1]
    else:
        groups = [list(np.flatnonzero(lengths == k)) for k in np.unique(lengths) if k >= 1]
    return tuple(_part(trace, [int(i) for i in g], pool) for g in groups)


def _part(trace: Trace, picked: list[int], pool: bool) -> Trace:
    """The trace of the solves ``picked`` (one, or several of equal length)."""
    s = trace.solves
    assert s is not None
    spans = [(int(s.offsets[i]), int(s.offsets[i + 1])) for i in picked]
    if len(spans) == 1:
        a, b = spans[0]
        stamps, norms = trace.stamps[:, a:b], trace.residual_norms[a:b]
    else:  # each later solve without its call 0, its steps laid after the previous end
        steps = np.concatenate([np.diff(trace.stamps[:, a:b], axis=1) for a, b in spans],
                               axis=1)
        stamps = np.concatenate([trace.stamps[:, spans[0][0]:spans[0][0] + 1],
                                 trace.stamps[:, spans[0][0]:spans[0][0] + 1]
                                 + np.cumsum(steps, axis=1)], axis=1)
        norms = np.concatenate([trace.residual_norms[spans[0][0]:spans[0][0] + 1],
                                *(trace.residual_norms[a + 1:b] for a, b in spans)])
    seconds = s.seconds[:, picked].sum(axis=1)
    outside = _outside(trace, spans, picked)
    k = int(stamps.shape[1] - 1)
    reasons = sorted({s.reasons[i] for i in picked})
    attrs = dict(trace.attrs)
    attrs.update(
        iterations=k, iterations_done=k, monitor_calls=k + 1,
        petsc_iterations=int(s.petsc_iterations[picked].sum()),
        converged_reason=",".join(reasons), solve_max=float(seconds.max()),
        solve_min=float(seconds.min()), solve_mean=float(seconds.mean()),
        solve=f"K={k // len(picked)} x {len(picked)}" if pool else picked[0],
    )
    attrs.pop("setup_max", None)
    if outside is not None:
        attrs["setup_max"] = outside
    setups = _per_solve(attrs.get("setup_seconds_solves"), s.count)
    if setups is not None:  # a ksptrace trace trace's set-up, kept apart: this part's own
        attrs["setup_seconds"] = float(setups[picked].sum())
    path = None if trace.path is None else f"{trace.path}#solve={attrs['solve']}"
    # iteration columns of solve i: its stamps' columns minus the i + 1 calls 0 so far
    cols = np.concatenate([np.arange(a - i, b - i - 1) for i, (a, b) in zip(picked, spans,
                                                                            strict=True)])
    waits = calls = None
    if trace.wait_seconds is not None and trace.mpi_calls is not None:
        waits, calls = trace.wait_seconds[:, cols], trace.mpi_calls[:, cols]
    events = None if trace.event_seconds is None else trace.event_seconds[:, cols]
    return Trace(stamps, norms, trace.node_ids, trace.hostnames, seconds, attrs, path,
                 wait_seconds=waits, mpi_calls=calls, event_seconds=events)


def _per_solve(text: object, count: int) -> np.ndarray | None:
    """A per-solve attribute written as one number per solve (``setup_seconds_solves``), or
    None when absent or not one finite number per solve."""
    if not isinstance(text, str):
        return None
    try:
        values = np.array([float(v) for v in text.split()])
    except ValueError:
        return None
    return values if values.size == count and np.isfinite(values).all() else None


def _outside(trace: Trace, spans: list[tuple[int, int]], picked: list[int]) -> float | None:
    """The largest over ranks of the picked solves' time outside their iterations (KSPSolve
    seconds less the span of the solve's stamps, summed); None when a rank's is not finite or
    below zero (the solve time came from another clock)."""
    s = trace.solves
    assert s is not None
    spans_each = np.stack([trace.stamps[:, b - 1] - trace.stamps[:, a] for a, b in spans], axis=1)
    each = s.seconds[:, picked] - spans_each
    if not np.isfinite(each).all() or (each < 0).any():
        return None
    return float(each.sum(axis=1).max())
