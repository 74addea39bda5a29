"""Which timings a trace refuses, and the reason it gives (Trace.timing_fault)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ksptrace.trace.model import MAX_ITERATION_SECONDS, Trace
from tests.trace.test_io import make_trace


def _with_times(times: np.ndarray) -> Trace:
    t = make_trace(nprocs=2, k=times.shape[1])
    stamps = np.concatenate([np.zeros((2, 1)), np.cumsum(times, axis=1)], axis=1)
    return replace(t, stamps=stamps, solve_seconds=stamps[:, -1] + 1e-5)


def test_plausible_timings_pass() -> None:
    assert make_trace().timing_fault() is None


@pytest.mark.parametrize(("where", "value", "reason"), [
    ((1, 3), 0.0, "stamps not increasing (rank 1, iteration 4 takes 0 s)"),
    ((0, 2), -1e-4, "stamps not increasing (rank 0, iteration 3 takes -0.0001 s)"),
    ((1, 0), 5e-10, "iteration times below 1 ns (the shortest is 5e-10 s)"),
    ((0, 4), 2 * MAX_ITERATION_SECONDS, "an iteration time of"),
])
def test_each_implausible_time_names_itself(where: tuple[int, int], value: float,
                                            reason: str) -> None:
    times = np.full((2, 6), 1e-4)
    times[where] = value
    fault = _with_times(times).timing_fault()
    assert fault is not None
    assert fault.startswith(reason)


def test_nan_and_negative_solve_times_are_refused() -> None:
    t = make_trace()
    stamps = t.stamps.copy()
    stamps[0, 2] = np.nan
    assert replace(t, stamps=stamps).timing_fault() == "timings contain NaN or inf"
    bad = replace(t, solve_seconds=-t.solve_seconds)
    assert bad.timing_fault() == "negative KSPSolve times"



def test_the_verdict_is_worked_out_once_per_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = np.isfinite

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[call-overload]

    trace = _with_times(np.full((2, 6), 1e-4))
    monkeypatch.setattr(np, "isfinite", counted)
    assert trace.timing_fault() is None
    first = len(calls)
    assert first > 0
    assert trace.timing_fault() is None  # the reader's and the analysis' question: one answer
    assert len(calls) == first
    bad = replace(trace, solve_seconds=np.array([-1.0, 1.0]))  # a new trace: asked afresh
    assert bad.timing_fault() == "negative KSPSolve times"
    assert len(calls) > first


@pytest.mark.parametrize("base", [3e-5, 1e-3, 0.1])
def test_one_nanosecond_is_not_below_one_nanosecond(base: float) -> None:
    """Issue 50: a 1e-9 s time, computed from stamps that carry rounding, was refused as
    "below 1 ns (the shortest is 1e-09 s)"; a time truly below says so in enough digits."""
    for where in range(6):
        times = np.full((2, 6), base)
        times[1, where] = 1e-9
        assert _with_times(times).timing_fault() is None, (base, where)
        times[1, where] = 0.99996e-9
        fault = _with_times(times).timing_fault()
        assert fault is not None
        assert fault.startswith("iteration times below 1 ns (the shortest is 9.9996e-10 s)")
