"""The undisturbed time: a low quantile of each iteration's slowest rank, times K."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation.load import undisturbed_time

K, BASE = 400, 1e-3


def _times(nprocs: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return BASE * (1.0 + 0.02 * rng.random((nprocs, K)))


def test_intermittent_interference_leaves_it_where_it_was() -> None:
    quiet = _times(2, 0)
    busy = quiet.copy()
    rng = np.random.default_rng(1)
    hit = rng.random(K) < 0.6  # a busy process takes rank 1's core in 60 % of the iterations
    busy[1, hit] *= 3.0
    assert busy.max(axis=0).sum() > 2.0 * quiet.max(axis=0).sum()  # the solve time doubles
    assert undisturbed_time(busy) == pytest.approx(undisturbed_time(quiet), rel=0.01)


def test_oversubscription_slows_every_iteration_and_raises_it() -> None:
    quiet = _times(3, 2)
    shared = quiet.copy()
    shared[2] *= 2.5  # three ranks on two cores: one rank waits in every iteration
    assert undisturbed_time(shared) > 2.0 * undisturbed_time(quiet)


def test_it_is_k_times_the_quantile_of_the_slowest_rank() -> None:
    t = np.array([[1.0, 5.0, 3.0, 2.0], [2.0, 1.0, 4.0, 2.0]])  # slowest: 2, 5, 4, 2
    assert undisturbed_time(t, q=0.0) == 4 * 2.0
    assert undisturbed_time(t, q=1.0) == 4 * 5.0
    assert undisturbed_time(t, q=0.5) == 4 * np.quantile([2.0, 5.0, 4.0, 2.0], 0.5)


@pytest.mark.parametrize(("times", "q"), [(np.zeros((0, 3)), 0.05), (np.ones(4), 0.05),
                                          (np.ones((2, 3)), 1.5)])
def test_bad_input_says_what_is_wrong(times: np.ndarray, q: float) -> None:
    with pytest.raises(AnalysisError, match="must"):
        undisturbed_time(times, q)
