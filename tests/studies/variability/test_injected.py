"""The exact expectation of a known injected noise, against closed forms and a Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.noise.draw import detours
from ksptrace.noise.spec import parse
from ksptrace.studies.variability.stats.injected import expected_max_with_noise, noise_truth

C = 100e-6  # a constant natural iteration time


@pytest.mark.parametrize("count", [1, 2, 7, 64])
def test_fixed_detour_closed_form(count: int) -> None:
    # max of N copies of C + v Bernoulli(p): C + v (1 - (1 - p)^N)
    spec = parse("fixed:value=50us,p=0.2")
    got = expected_max_with_noise(np.full(100, C), spec, count)
    assert got == pytest.approx(C + 50e-6 * (1 - 0.8**count), rel=1e-9)


@pytest.mark.parametrize("count", [1, 2, 8, 100])
def test_exponential_detour_closed_form(count: int) -> None:
    # max of N iid Exp(scale) is scale * H_N
    spec = parse("exponential:scale=30us")
    harmonic = sum(1 / i for i in range(1, count + 1))
    got = expected_max_with_noise(np.full(10, C), spec, count)
    assert got == pytest.approx(C + 30e-6 * harmonic, rel=1e-6)


def test_no_noise_is_the_natural_expected_max() -> None:
    rng = np.random.default_rng(0)
    x = rng.gamma(4.0, 25e-6, 3000)
    got = expected_max_with_noise(x, parse("none"), 4)
    # Exact for the empirical distribution: E[max of 4 draws with replacement from x].
    xs = np.sort(x)
    n = xs.size
    cdf = np.arange(1, n + 1) / n
    probs = cdf**4 - np.concatenate(([0.0], cdf[:-1])) ** 4
    assert got == pytest.approx(float(probs @ xs), rel=1e-6)


@pytest.mark.parametrize(
    "text", ["lognormal:median=20us,sigma=1.2,p=0.3", "pareto:scale=10us,shape=2.5,p=0.1",
             "uniform:low=5us,high=80us,p=0.5"]
)
def test_heavy_tails_against_monte_carlo(text: str) -> None:
    rng = np.random.default_rng(1)
    natural = rng.gamma(6.0, 15e-6, 4000)
    spec = parse(text + ",seed=9")
    count = 8
    exact = expected_max_with_noise(natural, spec, count)
    draws = 200_000
    d = np.stack([detours(spec, u, draws) for u in range(count)])
    s = rng.choice(natural, size=(count, draws)) + d
    maxima = s.max(axis=0)
    mc, se = maxima.mean(), maxima.std() / np.sqrt(draws)
    # 5 standard errors, plus the 0.2 % the reduction of the natural sample may cost.
    assert abs(exact - mc) < 5 * se + 2e-3 * mc, (exact, mc, se)


def test_truth_of_a_run() -> None:
    t = noise_truth(np.full(50, C), parse("fixed:value=40us,p=0.5"), 2, 1000)
    assert t.pipelined == pytest.approx(1000 * (C + 20e-6))
    assert t.standard == pytest.approx(1000 * (C + 40e-6 * 0.75))
    assert t.standard > t.pipelined


def test_infinite_mean_is_refused() -> None:
    with pytest.raises(AnalysisError, match="infinite mean"):
        expected_max_with_noise(np.full(5, C), parse("pareto:scale=10us,shape=0.9"), 2)
    with pytest.raises(AnalysisError, match="N must be >= 1"):
        expected_max_with_noise(np.full(5, C), parse("none"), 0)
