"""Float-noise ties (issue 61): real iteration times are differences of clock readings, so one
clock tick appears as several values a few ulps apart. A cell edge between two such copies made
a cell 1e-17 s wide holding dozens of values, whose probability is rounding: the engine's own
objective at its reported parameters then differed from its reported objective, and fits
marked ``ok`` were far from the best point of their box. The tie rule
(:func:`ksptrace.studies.fits.binned.equal_count_cells`) never splits such a group."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.fits import GUARANTEE_NATS, binned, equal_count_cells, family, fit_family
from ksptrace.studies.fits.binned import negative_loglik, tie_groups
from ksptrace.studies.fits.verify import strong_search
from tests.studies.fits.maxima import theta_of


def timer_values(n: int = 2000, seed: int = 3) -> np.ndarray:
    """Iteration times as a timer gives them: durations in whole nanoseconds (a narrow bulk, so
    most ticks repeat, and 2 % detours), each the difference of two stamps counted from the
    solve's start, so that one tick comes back as values ~1e-17 s apart."""
    rng = np.random.default_rng(seed)
    ticks = np.round(rng.gamma(4.0, 2.0, n) + 2.3e5).astype(np.int64)  # ~0.23 ms, a few ns wide
    detour = rng.random(n) < 0.02
    ticks[detour] += np.round(rng.exponential(2e5, detour.sum())).astype(np.int64)
    stamps = np.concatenate(([0], np.cumsum(ticks))) * 1e-9 + 0.37
    return np.diff(stamps)


def test_the_values_have_float_noise_ties_as_real_ones_do() -> None:
    x = np.sort(timer_values())
    gaps = np.diff(x)
    assert np.count_nonzero((gaps > 0) & (gaps < 1e-15)) > 30
    assert np.count_nonzero(gaps == 0) > 100


def test_no_edge_splits_a_group_of_ties() -> None:
    x = np.sort(timer_values())
    edges, counts = equal_count_cells(x)
    first = np.searchsorted(x, edges, side="left")
    assert np.all(x[first] - x[first - 1] > 1e-12)  # either side of an edge: distinct ticks
    assert counts.sum() == x.size
    assert np.all(counts > 0)
    group = tie_groups(x)
    assert np.all(group[first] == first)  # each edge is a group's first value: it counts above


def test_groups_at_the_ends_and_exact_ties() -> None:
    x = np.sort(np.concatenate((np.full(40, 1.0), 1.0 + np.arange(1, 41) * 1e-9,
                                [1.0 + 41e-9 + 1e-18] * 3)))
    edges, counts = equal_count_cells(x)
    assert edges.size >= 1
    assert edges[0] > x[0]
    assert counts[0] >= 40
    assert counts[-1] >= 3
    assert counts.sum() == x.size


@pytest.mark.parametrize("name", ["norm", "gamma", "johnsonsu", "exponweib"])
def test_a_fit_on_timer_values_is_what_it_reports(name: str) -> None:
    """The objective recomputed from the reported parameters equals the reported one, and an ok
    fit is within the engine's guarantee of a strong multi-start search's best point."""
    data = binned(*equal_count_cells(np.sort(timer_values())))
    fit = fit_family(family(name), data)
    theta = theta_of(name, data, fit.params)
    assert negative_loglik(family(name), data, theta) == pytest.approx(fit.objective, abs=1e-6)
    if fit.status in ("ok", "boundary"):
        strong = strong_search(family(name), data, theta)
        assert strong.objective >= fit.objective - GUARANTEE_NATS, (fit.status, fit.reason)


def test_the_edges_apply_the_rule_of_the_whole_sample() -> None:
    """equal_count_cells finds each edge's group by binary search from the edge; the groups are
    those tie_groups finds over the whole sample (long exact runs, noise chains, both ends)."""
    rng = np.random.default_rng(9)
    ticks = np.concatenate((np.full(300, 5), rng.integers(5, 40, 3000), np.full(200, 40)))
    x = np.sort(ticks * 1e-9 + 2e-4 + rng.integers(0, 3, ticks.size) * 1e-17)
    edges, counts = equal_count_cells(x)
    group = tie_groups(x)
    first = np.searchsorted(x, edges, side="left")
    assert np.all(group[first] == first)
    assert counts.sum() == x.size
    assert np.all(counts[1:-1] > 0)
