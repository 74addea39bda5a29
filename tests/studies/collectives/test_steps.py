"""The step-wise piecewise fit (issue 54): known steps recovered from synthetic curves at 2 % and
10 % noise, none invented on a curve without one, and the PLogP model built on it."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.pointtopoint import fit_plogp_model
from ksptrace.studies.collectives.steps import fit_steps, synthetic_steps

SIZES = 2.0 ** np.arange(21)  # 1 B .. 1 MiB, as ksptrace collectives --op plogp measures
TWO_STEPS = ((0.9e-6, 1.3e-6, 4.5e-6), (2e-11, 1e-10, 1e-10), (512, 4096))
"""o_s-like: a 45 % step at 512 B, a 3x step at 4 KiB (the eager limit)."""
EAGER = ((1.8e-6, 5.1e-6), (1e-11, 1e-10), (4096,))
"""o_r-like: 1.8 us, then 5.1 us from 4 KiB on (the issue's figures)."""
FLAT = ((1e-6,), (1e-10,), ())
SEEDS = range(30)


def _found(curve: tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]],
           noise: float) -> int:
    """In how many of 30 noisy draws the fit finds exactly the curve's breakpoints."""
    a, b, breaks = curve
    return sum(fit_steps(SIZES, synthetic_steps(SIZES, a, b, breaks, noise,
                                                np.random.default_rng(seed))).breakpoints
               == breaks for seed in SEEDS)


def test_exact_curves_are_recovered_exactly() -> None:
    for a, b, breaks in (TWO_STEPS, EAGER, FLAT):
        values = synthetic_steps(SIZES, a, b, breaks, 0.0, np.random.default_rng(0))
        fit = fit_steps(SIZES, values)
        assert fit.breakpoints == breaks
        np.testing.assert_allclose(fit.intercepts, a, rtol=1e-6)
        np.testing.assert_allclose(fit(SIZES), values, rtol=1e-6)
    fit = fit_steps(SIZES, synthetic_steps(SIZES, *EAGER, 0.0, np.random.default_rng(0)))
    assert fit.jumps()[0] == pytest.approx((5.1e-6 + 4096e-10) / (1.8e-6 + 4096e-11) - 1)


@pytest.mark.parametrize(("noise", "curve", "at_least"), [
    (0.02, TWO_STEPS, 29), (0.02, EAGER, 29), (0.02, FLAT, 28),
    (0.10, EAGER, 28), (0.10, FLAT, 27),
])
def test_known_steps_are_found_and_none_invented(noise: float, curve: tuple[
        tuple[float, ...], tuple[float, ...], tuple[int, ...]], at_least: int) -> None:
    assert _found(curve, noise) >= at_least


def test_a_continuous_fit_would_miss_the_step_this_one_does_not() -> None:
    """The issue's o_r: the old continuous fit missed the 4 KiB value by about -60 %."""
    values = synthetic_steps(SIZES, *EAGER, 0.02, np.random.default_rng(3))
    fit = fit_steps(SIZES, values)
    assert abs(fit(np.array([4096.0]))[0] / values[12] - 1) < 0.1


def test_bad_input_is_refused() -> None:
    with pytest.raises(AnalysisError, match="positive finite"):
        fit_steps(SIZES, -np.ones(21))
    with pytest.raises(AnalysisError, match="distinct sizes"):
        fit_steps(SIZES[:2], np.ones(2))


def test_the_plogp_model_keeps_the_eager_step_in_every_function() -> None:
    rng = np.random.default_rng(5)
    parts = [synthetic_steps(SIZES, *EAGER, 0.02, rng)[:, None] * np.ones((1, 5))
             for _ in range(3)]
    model = fit_plogp_model(SIZES, parts[2] + 1e-6, *parts)
    for f in (model.send_overhead, model.recv_overhead, model.gap):
        assert 4096 in f.breakpoints


def test_slow_outliers_are_left_out_before_the_median() -> None:
    from ksptrace.studies.collectives.pointtopoint import robust_medians

    rows = np.array([[1.0, 1.1, 0.9, 1.05, 100.0], [1.0, 1.1, 0.9, 1.05, 0.2]])
    # the slow one is rejected (a descheduled rank); a fast one is kept (nothing makes a
    # message faster than it is, so a low value is not a disturbance)
    np.testing.assert_allclose(robust_medians(rows), [1.025, 1.0])


def test_weights_keep_a_noisy_tail_from_hiding_the_step() -> None:
    """2 % noise below 256 KiB, 50 % from there on (large messages on a shared machine)."""
    rel = np.where(SIZES >= 262144, 0.5, 0.02)
    weighted = unweighted = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        clean = synthetic_steps(SIZES, *EAGER, 0.0, rng)
        values = np.maximum(clean * (1 + rel * rng.standard_normal(SIZES.size)), 1e-7)
        weighted += 4096 in fit_steps(SIZES, values, rel_errors=rel).breakpoints
        unweighted += 4096 in fit_steps(SIZES, values).breakpoints
    assert weighted >= 28
    assert unweighted < weighted
