"""PLogP's measurement plan without MPI (issue 54): the gap as a train's slope, robust to one
disturbed train length, and the shuffled order of sizes that both ranks compute alike."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.collectives.plogp import TRAINS, size_order, train_slope


def test_the_gap_is_the_slope_of_the_train_time() -> None:
    times = [3e-6 + n * 2e-6 for n in TRAINS]
    assert train_slope(TRAINS, times) == pytest.approx(2e-6)


def test_one_disturbed_train_length_does_not_move_the_gap() -> None:
    times = [3e-6 + n * 2e-6 for n in TRAINS]
    times[1] += 40e-6  # a rank descheduled during every train of one length
    assert train_slope(TRAINS, times) == pytest.approx(2e-6)
    # a least-squares line through the four would be moved
    slope = np.polyfit(TRAINS, times, 1)[0]
    assert abs(slope / 2e-6 - 1) > 0.3


def test_each_round_shuffles_the_sizes_alike_on_every_rank() -> None:
    orders = [size_order(21, r) for r in range(20)]
    for order in orders:
        assert sorted(order) == list(range(21))
    assert all(np.array_equal(size_order(21, r), orders[r]) for r in range(20))
    assert len({tuple(o) for o in orders}) == 20
    # over the rounds every size is measured early and late: a burst of load at one moment of
    # each round does not always land on the same sizes
    position = np.array([np.argsort(o) for o in orders])
    assert (position.min(axis=0) < 7).all()
    assert (position.max(axis=0) > 13).all()
