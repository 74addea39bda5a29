"""The synthetic trace generator: seeded, shaped like real traces, with the requested structure."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.studies.variability.stats.cycles import cycle_layout, fill_was_recorded
from ksptrace.trace.synthetic import inject_outliers, synthetic_trace, trace_from_times


def test_seeded_and_shaped_like_a_trace() -> None:
    a = synthetic_trace(48, 90, 16, "gmres", seed=3)
    b = synthetic_trace(48, 90, 16, "gmres", seed=3)
    c = synthetic_trace(48, 90, 16, "gmres", seed=4)
    assert np.array_equal(a.stamps, b.stamps)
    assert not np.array_equal(a.stamps, c.stamps)
    assert a.iteration_seconds.shape == (48, 90)
    assert a.n_nodes == 3
    assert a.ranks_per_node == 16
    assert (a.iteration_seconds > 0).all()
    assert a.attrs["nprocs"] == 48
    assert a.attrs["restart"] == 30
    # A lockstep method's KSPSolve is at least the sum of the per-iteration maxima.
    assert a.solve_max >= a.iteration_seconds.max(axis=0).sum()


def test_gmres_work_grows_through_the_restart_cycle() -> None:
    t = synthetic_trace(32, 600, 8, "gmres", seed=0).iteration_seconds
    lay = cycle_layout(600, "gmres", 30)
    early = np.median(t[:, lay.position == 1])
    late = np.median(t[:, lay.position == 28])
    assert late > 1.3 * early


def test_pgmres_records_cheap_fill_iterations() -> None:
    tr = synthetic_trace(32, 320, 8, "pgmres", seed=0)
    assert tr.attrs["iterations"] == 300
    assert fill_was_recorded("pgmres", tr.iterations, int(tr.attrs["iterations"]))
    lay = cycle_layout(tr.iterations, "pgmres", 30)
    t = tr.iteration_seconds
    assert np.median(t[:, lay.fill]) < 0.3 * np.median(t[:, ~lay.fill])


def test_non_stationary_unless_asked() -> None:
    drift = synthetic_trace(16, 2000, 4, "bcgs", seed=1).iteration_seconds.mean(axis=0)
    flat = synthetic_trace(16, 2000, 4, "bcgs", seed=1, stationary=True).iteration_seconds
    block = drift.reshape(20, 100).mean(axis=1)
    assert block.max() / block.min() > 1.15
    fblock = flat.mean(axis=0).reshape(20, 100).mean(axis=1)
    assert fblock.max() / fblock.min() < 1.02
    assert flat.min() >= 4e-4
    assert flat.max() <= 6e-4


def test_bad_sizes_are_usage_errors() -> None:
    with pytest.raises(UsageError, match=">= 1"):
        synthetic_trace(0, 10)


def test_trace_from_times_keeps_the_times_and_the_node_layout() -> None:
    rng = np.random.default_rng(0)
    times = 1e-4 * (1 + rng.random((5, 40)))
    tr = trace_from_times(times, np.array([0, 0, 1, 1, 2]), ksp="pipebcgs")
    assert np.allclose(tr.iteration_seconds, times, rtol=0, atol=1e-12)
    assert (tr.n_nodes, tr.ranks_per_node) == (3, 2)
    assert tr.solve_seconds == pytest.approx(times.sum(axis=1) + 1e-3, abs=2e-5)
    lockstep = trace_from_times(times)
    assert lockstep.n_nodes == 1
    assert lockstep.solve_max == pytest.approx(times.max(axis=0).sum() + 1e-3, abs=2e-5)
    with pytest.raises(UsageError, match="node_ids"):
        trace_from_times(times, np.zeros(4, dtype=np.int64))


def test_inject_outliers_delays_whole_iterations_or_single_entries() -> None:
    times = np.full((4, 200), 3e-4)
    whole = inject_outliers(times, 0.05, 8e-3, 28e-3, seed=1)
    slow = whole[0] > 1e-3
    assert slow.sum() == 10
    assert (whole[:, slow] > 8e-3).all()
    assert np.array_equal(whole[:, ~slow], times[:, ~slow])
    single = inject_outliers(times, 0.01, 8e-3, 28e-3, seed=1, whole_iterations=False)
    assert (single > 1e-3).sum() == 8
    assert (times == 3e-4).all()  # the input is left alone
    with pytest.raises(UsageError, match="fraction"):
        inject_outliers(times, 1.5, 0.0, 1.0)
