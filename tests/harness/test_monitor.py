"""The stamping monitor: preallocated, indexed by iteration, and loud about gaps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ksptrace.errors import SolverError
from ksptrace.harness.monitoring.monitor import StampMonitor


def clock() -> itertools.count[float]:
    return itertools.count(100.0, 0.5)


def test_stamps_and_norms_by_iteration() -> None:
    ticks = clock()
    mon = StampMonitor(4, lambda: next(ticks))
    buffer = mon.stamps
    for its, norm in enumerate((1.0, 0.5, 0.25, 0.125)):
        mon.callback(None, its, norm)
    stamps, norms = mon.recorded(3)
    np.testing.assert_array_equal(stamps, [100.0, 100.5, 101.0, 101.5])
    np.testing.assert_array_equal(norms, [1.0, 0.5, 0.25, 0.125])
    assert mon.stamps is buffer  # no reallocation


def test_calls_beyond_capacity_are_ignored_then_reported() -> None:
    ticks = clock()
    mon = StampMonitor(2, lambda: next(ticks))
    for its in range(4):
        mon.callback(None, its, 1.0)  # must not raise inside PETSc's callback
    with pytest.raises(SolverError, match="more than the 1 forced"):
        mon.recorded(3)


def test_an_unreported_iteration_is_an_error() -> None:
    ticks = clock()
    mon = StampMonitor(4, lambda: next(ticks))
    for its in (0, 1, 3):
        mon.callback(None, its, 1.0)
    with pytest.raises(SolverError, match="never reported iteration 2"):
        mon.recorded(3)


def test_reset_forgets_a_warmup() -> None:
    ticks = clock()
    mon = StampMonitor(3, lambda: next(ticks))
    for its in range(3):
        mon.callback(None, its, 1.0)
    mon.reset()
    mon.callback(None, 0, 2.0)
    with pytest.raises(SolverError, match="never reported iteration 1"):
        mon.recorded(2)
    assert mon.recorded(0)[1].tolist() == [2.0]
