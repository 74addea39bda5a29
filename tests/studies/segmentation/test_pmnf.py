"""The batched PMNF modeler: search space, exact recovery, LOO choice, many series, bad input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation import pmnf


def test_search_space_is_extrap_default() -> None:
    assert len(pmnf.TERMS) == 42
    assert len(set(pmnf.TERMS)) == 42
    poly = {i for i, j in pmnf.TERMS if j == 0}
    expected = {
        Fraction(s)
        for s in [
            "1/4",
            "1/3",
            "1/2",
            "2/3",
            "3/4",
            "4/5",
            "1",
            "5/4",
            "4/3",
            "3/2",
            "5/3",
            "7/4",
            "2",
            "9/4",
            "7/3",
            "5/2",
            "8/3",
            "11/4",
            "3",
        ]
    }
    assert poly == expected
    # log2 terms are combined only with some exponents
    assert (Fraction(4, 5), 1) not in pmnf.TERMS
    assert (Fraction(3), 2) not in pmnf.TERMS
    assert (Fraction(0), 1) in pmnf.TERMS
    assert (Fraction(0), 2) in pmnf.TERMS


@pytest.mark.parametrize("term", [0, 8, 18, 19, 30, 40])
@pytest.mark.parametrize("criterion", ["smape", "rss"])
def test_recovers_exact_law(term: int, criterion: pmnf.Criterion) -> None:
    i, j = pmnf.TERMS[term]
    p = np.arange(1.0, 9.0)
    y = 3.0 + 0.5 * pmnf.term_values(p, float(i), float(j))
    m = pmnf.fit(p, y, criterion)
    assert m.exponents == (i, j)
    assert m.c0 == pytest.approx(3.0, rel=1e-6)
    assert m.c1 == pytest.approx(0.5, rel=1e-6)
    np.testing.assert_allclose(m(p), y, rtol=1e-9)


def test_constant_series_gives_constant_model() -> None:
    m = pmnf.fit(np.arange(1.0, 7.0), np.full(6, 4.2))
    assert m.term == pmnf.CONSTANT
    assert m.c0 == pytest.approx(4.2)
    assert str(m) == "4.2"


def test_many_series_in_one_call_match_one_by_one() -> None:
    rng = np.random.default_rng(0)
    p = 2.0 ** np.arange(1, 8)
    terms = rng.integers(0, len(pmnf.TERMS), 50)
    y = np.stack(
        [
            10 + 2 * pmnf.term_values(p, float(pmnf.TERMS[t][0]), float(pmnf.TERMS[t][1]))
            for t in terms
        ]
    )
    y *= 1 + rng.uniform(-0.02, 0.02, y.shape)
    fits = pmnf.fit_many(p, y)
    assert len(fits) == 50
    for s in range(0, 50, 7):
        one = pmnf.fit_many(p, y[s])
        assert one.term[0] == fits.term[s]
        assert one.c1[0] == pytest.approx(fits.c1[s])
    np.testing.assert_allclose(fits.predict(p)[3], fits.model(3)(p))


def test_loo_cost_matches_explicit_refits() -> None:
    p = np.arange(1.0, 7.0)
    y = np.array([3.0, 5.1, 6.8, 9.4, 10.7, 13.5])
    fits = pmnf.fit_many(p, y, "rss")
    m = fits.model(0)
    i, j = m.i, m.j
    loo = 0.0
    for k in range(p.size):
        keep = np.arange(p.size) != k
        x = np.stack([np.ones(keep.sum()), pmnf.term_values(p[keep], i, j)], axis=1)
        coef, *_ = np.linalg.lstsq(x, y[keep], rcond=None)
        pred = coef[0] + coef[1] * pmnf.term_values(p[k : k + 1], i, j)[0]
        loo += (pred - y[k]) ** 2
    assert fits.cv_cost[0] == pytest.approx(loo, rel=1e-9)


def test_loo_residuals_of_many_series() -> None:
    p = np.arange(1.0, 7.0)
    ys = np.array([[3.0, 5.1, 6.8, 9.4, 10.7, 13.5], [7.0, 7.1, 6.9, 7.05, 7.0, 6.95]])
    fits = pmnf.fit_many(p, ys, "rss")
    resid = pmnf.loo_residuals(fits, ys)
    assert resid.shape == (2, 6)
    np.testing.assert_allclose(np.sum(resid**2, axis=1), fits.cv_cost, rtol=1e-9)


def test_nrss_definition() -> None:
    p = np.arange(1.0, 6.0)
    y = np.array([9.0, 16, 25, 36, 37])
    fits = pmnf.fit_many(p + 2, y)
    resid = fits.model(0)(p + 2) - y
    assert fits.nrss[0] == pytest.approx(np.sqrt(np.sum(resid**2)) / y.mean())


def test_repetitions_reduce_to_median() -> None:
    p, y = pmnf.aggregate([1, 2, 2, 2, 3], [1.0, 5.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(p, [1, 2, 3])
    np.testing.assert_array_equal(y, [1, 2, 3])


def test_extrap_notation() -> None:
    p = np.arange(1.0, 11.0)
    m = pmnf.fit(p, 2 + 0.5 * np.sqrt(p) * np.log2(p))
    assert str(m) == "2 + 0.5 * p^(1/2) * log2(p)^(1)"


@pytest.mark.parametrize(
    ("p", "y", "words"),
    [
        ([1, 2], [1, 2], "at least 3 points"),
        ([0, 1, 2, 3], [1, 2, 3, 4], "positive"),
        ([1, 1, 2, 3], [1, 2, 3, 4], "distinct"),
        ([1, 2, 3, 4], [1, np.nan, 3, 4], "NaN"),
    ],
)
def test_bad_input_says_what_to_do(p: list[float], y: list[float], words: str) -> None:
    with pytest.raises(AnalysisError, match=words):
        pmnf.fit_many(np.array(p, dtype=float), np.array(y, dtype=float))
