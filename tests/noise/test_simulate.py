"""The discrete-event model against timelines worked out by hand, and its detours against the
harness's (issue 62)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ksptrace.noise.draw import all_detours, detours
from ksptrace.noise.simulate import (
    PIPELINED,
    STANDARD,
    draw_detours,
    harness_detours,
    natural_work,
    simulate,
    true_cost,
)
from ksptrace.noise.spec import parse

L, R, K = 250e-6, 25e-6, 40


def one_detour(rank: int, k: int, size: float, ranks: int = 2) -> np.ndarray:
    d = np.zeros((ranks, K))
    d[rank, k] = size
    return d


def test_without_detours_a_standard_method_pays_work_plus_latency_and_pipelining_hides_it(
) -> None:
    work = np.full((2, K), L)
    assert simulate(work, 0 * work, R, STANDARD).solve == pytest.approx(K * (L + R))
    # each reduction runs beside its iteration's work and is hidden by it
    assert simulate(work, 0 * work, R, PIPELINED).solve == pytest.approx(K * L)
    # a reduction longer than the work sets the pace
    assert simulate(work, 0 * work, 2 * L, PIPELINED).solve == pytest.approx(K * 2 * L)


def test_a_standard_method_pays_every_iterations_slowest_detour() -> None:
    work = np.full((2, K), L)
    d = one_detour(0, 3, 100e-6) + one_detour(1, 10, 100e-6) + one_detour(1, 3, 40e-6)
    assert true_cost(work, d, R, STANDARD) == pytest.approx(200e-6)


def test_a_pipelined_method_pays_its_slowest_ranks_own_detours_within_its_slack() -> None:
    work = np.full((2, K), L)
    # rank 0 late by 100 µs in iteration 3, rank 1 by as much in iteration 10: each within the
    # slack L - R, so the ranks catch up with each other and the run pays one detour
    d = one_detour(0, 3, 100e-6) + one_detour(1, 10, 100e-6)
    assert true_cost(work, d, R, PIPELINED) == pytest.approx(100e-6)
    # a detour longer than the slack holds the other rank too: both pay it
    long = one_detour(0, 3, 1e-3) + one_detour(1, 10, 1e-3)
    assert true_cost(work, long, R, PIPELINED) > 1.5e-3


def test_a_pipelined_method_pays_another_ranks_detour_one_iteration_late() -> None:
    """The lag of issue 62: rank 1's 1 ms detour in iteration 5 lengthens rank 0's iteration 6,
    in which nobody detoured."""
    work = np.full((2, K), L)
    run = simulate(work, one_detour(1, 5, 1e-3), R, PIPELINED)
    assert run.times[1, 5] == pytest.approx(L + 1e-3)
    assert run.times[0, 5] == pytest.approx(L)
    assert run.times[0, 6] == pytest.approx(1e-3 + R)  # waits for reduction 5
    standard = simulate(work, one_detour(1, 5, 1e-3), R, STANDARD)
    assert standard.times[0, 6] == pytest.approx(L + R)  # no lag: paid in iteration 5


def test_runs_are_simulated_at_once_as_one_by_one() -> None:
    rng = np.random.default_rng(4)
    work = natural_work(rng, (5, 3, K), L, jitter=0.1, drift=0.05)
    d = draw_detours(parse("exponential:scale=300us,p=0.2"), rng, (5, 3, K))
    for depth in (STANDARD, PIPELINED, 2):
        many = simulate(work, d, R, depth)
        for i in range(5):
            one = simulate(work[i], d[i], R, depth)
            assert many.solve[i] == pytest.approx(float(one.solve))
            assert np.allclose(many.times[i], one.times)
        assert np.allclose(many.times.sum(axis=-1).max(axis=-1), many.solve)


def test_harness_detours_are_the_ranks_own_streams() -> None:
    spec = parse("exponential:scale=1ms,p=0.1,seed=7")
    d = harness_detours(spec, 4, 200)
    assert np.array_equal(d, all_detours(spec, np.zeros(4, dtype=int), 200))
    assert np.array_equal(d[2], detours(spec, 2, 200))


@pytest.mark.parametrize("text", ["exponential:scale=1ms,p=0.1", "lognormal:median=50us,"
                                  "sigma=1,p=0.3", "fixed:value=200us,p=0.05"])
def test_many_runs_draw_detours_as_the_harness_does(text: str) -> None:
    """The vectorised draw uses the harness's size rule: the same hit rate and sizes."""
    spec = parse(text)
    many = draw_detours(spec, np.random.default_rng(1), (50, 4, 100)).ravel()
    harness = np.concatenate([detours(spec.reseeded(s), u, 100)
                              for s in range(50) for u in range(4)])
    assert abs((many > 0).mean() - (harness > 0).mean()) < 5 * np.sqrt(spec.p / many.size)
    if spec.dist != "fixed":
        assert stats.ks_2samp(many[many > 0], harness[harness > 0]).pvalue > 1e-3
    else:
        assert set(np.unique(many)) == set(np.unique(harness))


def test_ranks_and_nodes_are_drawn_as_the_spec_says() -> None:
    mix = parse("fixed:value=200us,ranks=1; uniform:low=0,high=150us,p=0.5,ranks=0")
    d = draw_detours(mix, np.random.default_rng(2), (10, 3, 50))
    assert np.all(d[:, 1] >= 199.9e-6)
    assert not d[:, 2].any()
    assert d[:, 0].max() <= 150e-6
    node = parse("fixed:value=1ms,p=0.3,per=node")
    shared = draw_detours(node, np.random.default_rng(3), (10, 4, 50), np.array([0, 0, 1, 1]))
    assert np.array_equal(shared[:, 0], shared[:, 1])
    assert not np.array_equal(shared[:, 0], shared[:, 2])
