"""The vectorised rule for E[max of N] against adaptive quadrature, and its refusals."""

from __future__ import annotations

import pytest
import scipy.stats as st

from ksptrace.studies.variability.stats import models
from ksptrace.studies.variability.stats.quadrature import expected_max_rule

FAMILIES = [
    st.johnsonsu(0.37, 1.39, loc=5.7e-4, scale=1.6e-4),
    st.johnsonsu(-1.2, 2.5, loc=2e-3, scale=3e-4),
    st.lognorm(0.4, loc=1e-4, scale=3e-4),
    st.gamma(3.5, loc=2e-4, scale=5e-5),
    st.norm(5e-4, 1.6e-4),
    st.genextreme(0.28, loc=4.5e-4, scale=1.8e-4),
    st.genextreme(-0.05, loc=4.5e-4, scale=1.8e-4),
    st.exponweib(2.23, 1.4, loc=1e-4, scale=4e-4),
    st.exponweib(41.1, 0.94, loc=1.2e-4, scale=9.3e-5),
]


@pytest.mark.parametrize("dist", FAMILIES, ids=lambda d: d.dist.name)
@pytest.mark.parametrize("count", [1.0, 2.0, 16.0, 64.0])
def test_the_rule_agrees_with_adaptive_quadrature(dist: object, count: float) -> None:
    by_rule = expected_max_rule(dist, count)
    assert by_rule is not None, "the rule refused a light-tailed family"
    reference = models.expected_max_adaptive(dist, count)
    assert by_rule == pytest.approx(reference, rel=1e-10, abs=0.0)


@pytest.mark.parametrize("dist", FAMILIES, ids=lambda d: d.dist.name)
def test_with_one_draw_the_rule_gives_the_mean(dist: object) -> None:
    assert expected_max_rule(dist, 1.0) == pytest.approx(float(dist.mean()), rel=1e-9)  # type: ignore[attr-defined]


def test_exponweib_mean_by_the_rule_is_scipys_integral() -> None:
    dist = st.exponweib(41.1, 0.94, loc=1.2e-4, scale=9.3e-5)
    assert models.mean_of(dist) == pytest.approx(float(dist.mean()), rel=1e-9)
    assert models.mean_of(dist) == expected_max_rule(dist, 1.0)


def test_a_heavy_upper_tail_is_refused_and_left_to_adaptive_quadrature() -> None:
    heavy = st.pareto(1.5, scale=1e-4)  # finite mean, quantiles growing like q^(-2/3)
    assert expected_max_rule(heavy, 2.0) is None
    # E[max of 2] = s (1 + 2 / (b - 1) - 1 / (2 b - 1)) = 4.5 s for b = 1.5
    assert models.expected_max(heavy, 2.0) == pytest.approx(4.5e-4, rel=1e-6)


def test_a_count_too_large_for_the_upper_quantiles_is_left_to_adaptive_quadrature() -> None:
    # The upper quantile of johnsonsu is scipy's ppf(1 - q): below q = 1e-16 it is infinite,
    # so N = 1e5 leaves too much of the integral beyond the grid and the rule declines.
    dist = FAMILIES[0]
    assert expected_max_rule(dist, 1e5) is None
    assert models.expected_max(dist, 1e5) == models.expected_max_adaptive(dist, 1e5)
