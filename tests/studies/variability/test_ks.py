"""The vectorised KS tests agree with scipy.stats.ks_2samp and with the test's definition."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats import ks


def test_pair_statistic_matches_scipy_for_unequal_sizes_and_ties() -> None:
    rng = np.random.default_rng(3)
    for n, m in [(1, 1), (5, 17), (400, 123), (1000, 1000)]:
        a = np.round(rng.gamma(2.0, 1.0, n), 1)
        b = np.round(rng.gamma(2.2, 1.0, m), 1)
        assert abs(ks.statistic(a, b) - st.ks_2samp(a, b).statistic) <= 1e-12


def test_one_vs_all_matches_scipy_pair_by_pair() -> None:
    rng = np.random.default_rng(4)
    x = rng.lognormal(0.0, 0.3, size=(40, 300))
    x[7] *= 1.05
    x[11] = np.round(x[11], 2)
    x[12] = np.round(x[12], 1)
    for reference in (0, 12, 39):
        res = ks.one_vs_all(x, reference=reference, alpha=0.05)
        expected = [st.ks_2samp(x[reference], x[q]).statistic for q in res.others]
        assert np.abs(res.statistics - expected).max() <= 1e-12
        assert reference not in res.others
        assert res.others.size == 39


def test_one_vs_all_chunking_does_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(25, 50))
    whole = ks.one_vs_all(x, 3).statistics
    monkeypatch.setattr(ks, "ROWS_PER_CHUNK_ELEMENTS", 120)
    assert np.array_equal(ks.one_vs_all(x, 3).statistics, whole)


def test_threshold_is_c_alpha_times_size_factor() -> None:
    assert ks.critical_value(0.05) == pytest.approx(1.3581, abs=1e-4)
    assert ks.threshold(5000, 5000, 0.05) == pytest.approx(1.3581 * np.sqrt(2 / 5000), rel=1e-4)
    # Scipy's asymptotic p-value at the threshold is alpha.
    d = ks.threshold(4000, 4000, 0.05)
    assert st.kstwobign.sf(d * np.sqrt(2000.0)) == pytest.approx(0.05, rel=1e-4)


def test_rejection_fraction_separates_equal_from_shifted_ranks() -> None:
    rng = np.random.default_rng(6)
    same = rng.gamma(3.0, 1.0, size=(30, 2000))
    res = ks.one_vs_all(same, 0)
    assert res.fraction_rejected < 0.2
    shifted = same.copy()
    shifted[1:] += 0.3
    assert ks.one_vs_all(shifted, 0).fraction_rejected == 1.0
    pair = ks.compare_ranks(shifted, 0, 1)
    assert pair.rejected
    assert pair.statistic > pair.threshold


def test_one_rank_or_bad_values_say_why() -> None:
    with pytest.raises(AnalysisError, match="P >= 2"):
        ks.one_vs_all(np.ones((1, 10)))
    bad = np.ones((3, 10))
    bad[2, 4] = np.nan
    with pytest.raises(AnalysisError, match="NaN"):
        ks.one_vs_all(bad)
    with pytest.raises(AnalysisError, match="alpha"):
        ks.threshold(10, 10, 1.5)


def test_threads_do_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    x = np.round(rng.gamma(2.0, size=(37, 64)), 1)  # ties within and across ranks
    serial = ks.one_vs_all(x, 5, workers=1).statistics
    monkeypatch.setattr(ks, "THREAD_ELEMENTS", 0)  # threads at test size
    monkeypatch.setattr(ks, "ROWS_PER_CHUNK_ELEMENTS", 200)  # several blocks
    assert np.array_equal(ks.one_vs_all(x, 5, workers=3).statistics, serial)
    expected = [st.ks_2samp(x[5], x[q]).statistic for q in np.delete(np.arange(37), 5)]
    assert np.abs(serial - expected).max() <= 1e-12


@pytest.mark.parametrize("decimals", [0, 1, 3])
def test_heavy_ties_match_scipy_one_vs_all_and_pairwise(decimals: int) -> None:
    """Quantised times (as a coarse clock gives): many equal values within and across ranks."""
    rng = np.random.default_rng(decimals)
    x = np.round(rng.gamma(3.0, 1.0, size=(12, 200)), decimals)
    x[5] = x[0]  # identical ranks: D = 0
    res = ks.one_vs_all(x, reference=0)
    expected = [st.ks_2samp(x[0], x[q]).statistic for q in res.others]
    assert np.abs(res.statistics - expected).max() <= 1e-12
    pw = ks.pairwise(x)
    for a in range(12):
        for b in range(12):
            if a != b:
                assert abs(pw.statistics[a, b] - st.ks_2samp(x[a], x[b]).statistic) <= 1e-12
    assert pw.statistics[0, 5] == 0.0


@pytest.mark.parametrize("kind", ["lognormal", "ties", "zeros", "negative-zero", "subnormal",
                                  "inf", "negative", "nan", "empty"])
def test_rows_sorted_as_integers_equal_numpys_float_sort(kind: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.lognormal(-8.0, 0.5, size=(7, 301))
    if kind == "ties":
        x = np.round(x, 6)
    elif kind == "zeros":
        x[:, ::5] = 0.0
    elif kind == "negative-zero":
        x[:, ::7] = -0.0
        x[:, 1::7] = 0.0
    elif kind == "subnormal":
        x[:, ::3] = 5e-324 * rng.integers(1, 1000, size=x[:, ::3].shape)
    elif kind == "inf":
        x[2, 17] = np.inf
    elif kind == "negative":
        x[4, 9] = -1e-6
    elif kind == "nan":
        x[1, 3] = np.nan
    elif kind == "empty":
        x = x[:, :0]
    got = ks.sort_rows(x)
    want = np.sort(x, axis=1)
    assert got.dtype == np.float64
    assert np.array_equal(got, want, equal_nan=True)  # -0.0 == 0.0: equal as floats
    if kind != "negative-zero":
        assert got.tobytes() == want.tobytes()  # and the same bits
    assert (np.diff(got, axis=1) >= 0).all() or kind in ("nan", "inf")
