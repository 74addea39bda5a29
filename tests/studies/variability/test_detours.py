"""The bulk-plus-detours model (issue 63) against known truth: simulated iteration times with
detours (rate r, exponential sizes) fitted at P = 8 predict E[Σₖ maxₚ Tₚᵏ] at P = 64 to 8192,
beside the naive baseline (the smaller P's own Σₖ maxₚ); the tail check on a held-out half."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats.detours import (
    DetourModel,
    fit_detours,
    tail_check,
)

MU, SIGMA = 1e-3, 3e-5
TRUTHS = ((0.02, 0.5e-3), (0.01, 20e-3), (0.03, 5e-3))
"""(rate, mean detour size): detours 0.5x to 20x the median iteration, 1-3 % of iterations."""
P, K = 8, 4000


def _times(rng: np.random.Generator, shape: tuple[int, int], rate: float,
           size: float) -> np.ndarray:
    bulk = rng.normal(MU, SIGMA, shape)
    return bulk + (rng.random(shape) < rate) * rng.exponential(size, shape)


@pytest.mark.parametrize(("rate", "size"), TRUTHS[:2])
@pytest.mark.parametrize("count", [64, 1024])
def test_the_integral_is_the_simulated_expected_maximum(rate: float, size: float,
                                                        count: int) -> None:
    """E[max of N] = ∫ 1 − F^N against brute force with the true parameters."""
    rng = np.random.default_rng(11)
    reps = 200_000 // count
    top = _times(rng, (reps, count), rate, size).max(axis=1)
    exact = DetourModel(MU, SIGMA, rate, size, 0).expected_max(count)
    assert abs(exact - top.mean()) <= 3.5 * top.std() / np.sqrt(reps)


def _predictions(p: int, k: int) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """|error| and |error| / standard error of the 27 predictions (3 truths x 3 seeds x
    N = 64, 512, 8192) from sources of P x K values, and the naive baseline's errors at 8192."""
    errors, scaled, naive = [], [], []
    for rate, size in TRUTHS:
        truth = DetourModel(MU, SIGMA, rate, size, 0)
        for seed in (1, 2, 3):
            source = _times(np.random.default_rng(seed), (p, k), rate, size)
            model = fit_detours(source)
            assert model.rate == pytest.approx(rate, rel=0.25)
            assert model.size == pytest.approx(size, rel=0.15)
            for count in (64, 512, 8192):
                want, got = truth.expected_max(count), model.expected_max(count)
                errors.append(abs(got / want - 1))
                scaled.append(abs(got - want) / model.expected_max_se(count))
            naive.append(source.max(axis=0).mean() / truth.expected_max(8192) - 1)
    return np.array(errors), np.array(scaled), naive


def test_fitted_at_p8_it_predicts_p64_to_8192_within_5_percent_in_23_of_27() -> None:
    """From 32 000 source values (300-1000 detours) the error is the sampling error of the
    detour size, 1/sqrt(detours) of it: each miss lies within 2.5 of the prediction's own
    standard error (:meth:`DetourModel.expected_max_se`). Measured when written: 23 of 27
    within 5 % (the other four 5.1-8.2 %, from the sources with the fewest detours), median
    2.0 %; the naive baseline (the P = 8 run's own sum_k max_p) is 71-97 % low at N = 8192."""
    errors, scaled, naive = _predictions(P, K)
    assert np.median(errors) <= 0.03
    assert (errors <= 0.05).sum() >= 23
    assert errors.max() <= 0.09
    assert scaled.max() <= 2.5  # the misses are the size's sampling error, not a bias
    assert max(naive) <= -0.7  # the baseline misses what the detours do at scale


def test_with_enough_detours_it_predicts_p64_to_8192_within_5_percent_in_27_of_27() -> None:
    """The issue's target: E[sum_k max_p T] within 5 % at P = 64-8192. Met when the source
    holds enough detours for the size's 1/sqrt(m) to be well under 5 %: P = 32 x K = 10 000
    (3 200-9 600 detours, standard errors 1.0-1.8 %)."""
    errors, scaled, _ = _predictions(32, 10_000)
    assert (errors <= 0.05).sum() == 27, np.sort(errors)
    assert scaled.max() <= 3.0


def test_no_detours_is_the_bulk_alone_and_bad_input_says_so() -> None:
    rng = np.random.default_rng(4)
    model = fit_detours(rng.normal(MU, SIGMA, (4, 1000)))
    assert model.rate == 0.0
    assert model.sigma == pytest.approx(SIGMA, rel=0.05)
    # the maximum of N normals: about mu + sigma * 3.0 at N = 1000
    assert model.expected_max(1000) == pytest.approx(MU + SIGMA * 3.2414, rel=1e-3)
    with pytest.raises(AnalysisError, match="at least 100"):
        fit_detours(np.ones(10))
    with pytest.raises(AnalysisError, match="no spread"):
        fit_detours(np.ones(200))


def test_the_standard_error_is_the_detour_sizes() -> None:
    model = DetourModel(MU, SIGMA, 0.01, 20e-3, 400)
    se = model.expected_max_se(8192) / model.expected_max(8192)
    assert 0.8 / np.sqrt(400) < se < 1.0 / np.sqrt(400)  # the size decides E[max] at this N
    assert DetourModel(MU, SIGMA, 0.0, 0.0, 0).expected_max_se(64) == 0.0


def test_the_tail_check_compares_q99_on_the_held_out_half() -> None:
    rng = np.random.default_rng(2)
    good = tail_check(_times(rng, (P, K), 0.03, 5e-3))
    assert abs(good.miss) < 0.25
    assert not good.flagged
    # Pareto-sized detours (a tail heavier than exponential): the model's q99 misses by 40 %
    pareto = (rng.normal(MU, SIGMA, (P, K))
              + (rng.random((P, K)) < 0.03) * 1e-3 * rng.pareto(1.5, (P, K)))
    odd = tail_check(pareto)
    assert odd.flagged
    assert odd.miss > 0.25
