"""The synthetic trace generator: seeded, shaped like real traces, with the requested structure."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.analysis.cycles import cycle_layout, fill_was_recorded
from ksptrace.errors import UsageError
from ksptrace.trace.synthetic import synthetic_trace


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
