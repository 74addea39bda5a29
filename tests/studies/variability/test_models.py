"""Closed forms and the stable quantile-domain integral against direct numerical integration."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.stats as st
from scipy import integrate

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats import models


def _tail_form(dist: st.rv_continuous, n: float) -> float:
    """E[max] = lo + integral_lo^hi (1 - F^N) dx, F^N in log space; lo, hi cut negligible tails."""
    lo = float(dist.ppf(max(np.exp(-700.0 / n), 1e-12)))
    hi = float(dist.isf(max(1e-13 / n, 1e-16)))
    median_of_max = float(dist.isf(-np.expm1(np.log(0.5) / n)))

    def above(x: float) -> float:
        return float(-np.expm1(n * dist.logcdf(x)))

    val, _ = integrate.quad(
        above, lo, hi, limit=500, epsabs=0.0, epsrel=1e-11, points=[median_of_max]
    )
    return lo + val


@pytest.mark.parametrize("count", [1, 2, 10, 1000, 10_000, 100_000])
def test_expected_max_of_uniforms_is_exact_up_to_1e5(count: int) -> None:
    a, s = 3e-4, 2e-4
    exact = a + s * count / (count + 1)
    assert models.expected_max(st.uniform(a, s), count) == pytest.approx(exact, rel=1e-12)
    assert float(models.expected_max_uniform(a, s, count)) == pytest.approx(exact, rel=1e-15)


def test_uniform_closed_form_matches_direct_integration_for_small_counts() -> None:
    for count in [1, 3, 64]:
        direct = models.expected_max_direct(st.uniform(2.0, 3.0), count, 2.0, 5.0)
        assert float(models.expected_max_uniform(2.0, 3.0, count)) == pytest.approx(
            direct, rel=1e-10
        )


@pytest.mark.parametrize(
    "dist",
    [
        st.johnsonsu(1.0, 1.5, loc=4e-4, scale=5e-5),
        st.johnsonsu(-0.6, 3.3, loc=4e-4, scale=1e-4),
        st.norm(5e-4, 3e-5),
        st.gamma(4.0, loc=2e-4, scale=3e-5),
        st.lognorm(0.4, loc=1e-4, scale=2e-4),
    ],
)
def test_stable_form_matches_direct_and_tail_integrals(dist: st.rv_continuous) -> None:
    for count in [1, 2, 16, 512]:
        lo, hi = float(dist.ppf(1e-14)), float(dist.isf(1e-16))
        direct = models.expected_max_direct(dist, count, lo, hi)
        assert models.expected_max(dist, count) == pytest.approx(direct, rel=1e-7)
    for count in [1, 512, 100_000]:
        assert models.expected_max(dist, count) == pytest.approx(_tail_form(dist, count), rel=1e-7)


def test_expected_max_of_normals_matches_known_constants() -> None:
    # E[max of 2 standard normals] = 1/sqrt(pi); of 3 = 3 / (2 sqrt(pi)).
    assert models.expected_max(st.norm(), 2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-10)
    assert models.expected_max(st.norm(), 3) == pytest.approx(1.5 / np.sqrt(np.pi), rel=1e-10)
    assert models.expected_max(st.norm(1.0, 2.0), 1) == pytest.approx(1.0, abs=1e-12)


def test_bounds_hold_and_match_their_formulas() -> None:
    mu, sigma = 1.0, 0.5
    for n in [1, 2, 10, 1000]:
        exact = models.expected_max(st.norm(mu, sigma), n)
        cr = models.cramer_bound(mu, sigma, n)
        be = models.bertsimas_bound(mu, sigma, n)
        assert cr == pytest.approx(mu + sigma * (n - 1) / np.sqrt(2 * n - 1))
        assert be == pytest.approx(mu + sigma * np.sqrt(n - 1))
        assert exact <= cr + 1e-12
        assert cr <= be + 1e-12


def test_stationary_and_nonstationary_models() -> None:
    m = models.stationary_model("uniform", st.uniform(1.0, 1.0), iterations=100, count=9)
    assert m.standard == pytest.approx(100 * (1 + 0.9), rel=1e-12)
    assert m.pipelined == pytest.approx(150.0, rel=1e-12)
    x = np.array([[1.0, 2.0, 5.0], [3.0, 2.0, 4.0], [2.0, 2.0, 6.0]])
    fits = models.uniform_fits(x)
    assert list(fits.lower) == [1.0, 2.0, 4.0]
    assert list(fits.span) == [2.0, 0.0, 2.0]
    ns = models.nonstationary_model(fits, count=3)
    assert ns.standard == pytest.approx((1 + 1.5) + 2 + (4 + 1.5))
    assert ns.pipelined == pytest.approx(2 + 2 + 5)
    assert ns.pipelined_sample == pytest.approx(x.mean(axis=0).sum())
    assert models.measured_standard(x) == 3 + 2 + 6
    assert models.measured_pipelined(x) == 10


@pytest.mark.parametrize(
    "dist",
    [st.cauchy(3e-4, 1e-5), st.nct(0.8, 1.0, loc=3e-4, scale=1e-5), st.t(1.0), st.pareto(0.9)],
)
def test_expected_max_refuses_a_family_with_infinite_mean(dist: st.rv_continuous) -> None:
    with pytest.raises(AnalysisError, match="no finite mean"):
        models.expected_max(dist, 16)
    assert not models.has_finite_mean(dist)
    with pytest.raises(AnalysisError, match="no finite mean"):
        models.stationary_model("heavy", dist, 100, 16)


def test_a_heavy_but_finite_mean_family_is_still_computed() -> None:
    dist = st.nct(1.5, 0.5, loc=3e-4, scale=1e-5)
    assert models.has_finite_mean(dist)
    assert np.isfinite(models.expected_max(dist, 4))


def test_the_fast_quantiles_give_the_public_methods_numbers() -> None:
    """E[max] calls the families' quantile functions directly (tenfold faster, issue 35); the
    result is that of scipy's public ppf and isf, bit for bit or within 1e-12."""
    def public(dist: Any, n: float) -> float:
        def integrand(w: float) -> float:
            if np.exp(-w) == 0.0:
                return 0.0
            u = np.exp(-w / n)
            x = dist.ppf(u) if u < 0.5 else dist.isf(-np.expm1(-w / n))
            return float(x) * np.exp(-w)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            head = integrate.quad(integrand, 0.0, 1.0, limit=200, epsabs=0.0, epsrel=1e-12)[0]
            tail = integrate.quad(integrand, 1.0, np.inf, limit=200, epsabs=0.0, epsrel=1e-12)[0]
        return head + tail

    for dist in (st.johnsonsu(-1.9, 0.84, 1.97e-5, 6.0e-6), st.lognorm(0.5, 1e-4, 2e-5),
                 st.gamma(2.0, 1e-4, 1e-5), st.norm(1e-4, 1e-5), st.genextreme(-0.2, 1e-4, 1e-5),
                 st.exponweib(1.5, 2.0, 1e-4, 1e-5), st.nct(8, 1.0, 1e-4, 1e-5)):
        for n in (1.0, 13.0, 8192.0):
            assert models.expected_max(dist, n) == pytest.approx(public(dist, n), rel=1e-12)


@pytest.mark.parametrize(("a", "b", "loc", "scale"),
                         [(0.0, 1.0, 0.0, 1.0), (-1.3, 0.9, 2e-5, 3e-6), (2.5, 2.0, 1.0, 0.1),
                          (0.4, 0.55, -3.0, 7.0)])
def test_johnsonsu_mean_in_closed_form_equals_scipys_integral(
        a: float, b: float, loc: float, scale: float) -> None:
    """The closed form replaces scipy 1.10's numerical integration (issue 35): the same mean."""
    dist = st.johnsonsu(a, b, loc=loc, scale=scale)
    assert models.mean_of(dist) == pytest.approx(float(dist.mean()), rel=1e-9, abs=1e-15)
    positional = st.johnsonsu(a, b, loc, scale)  # as Fit.frozen() makes it
    assert models.mean_of(positional) == pytest.approx(float(dist.mean()), rel=1e-9, abs=1e-15)
    assert models.mean_of(st.norm(loc, scale)) == loc  # other families: scipy's own


@pytest.mark.parametrize("dist", [
    st.johnsonsu(-0.3677237208570368, 0.42285318609925154, 2.2654746276130387e-4,
                 2.678551395711626e-7),  # a_k-like fits of P = 1 traces whose rule fails at N = 1
    st.genextreme(-0.6649808575733273, 2.263402957255184e-4, 1.479321358444089e-6),
    st.gamma(3.0, 8e-5, 7e-6),
    st.norm(1e-4, 2e-6),
])
def test_one_draw_is_the_mean_without_adaptive_quadrature(
    dist: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """E[max of 1] is the mean: the same number as the adaptive quadrature gave (1e-12), and
    no adaptive quadrature is run for it (10-25 ms a call)."""
    quadrature = models.expected_max_adaptive(dist, 1.0)
    monkeypatch.setattr(models, "expected_max_adaptive", _refuse)
    assert models.expected_max(dist, 1.0) == pytest.approx(quadrature, rel=1e-12)


def _refuse(dist: Any, n: float) -> float:
    raise AssertionError("adaptive quadrature for one draw")
