"""The faster twins of scipy's penalised likelihood give the same bits, so the same fits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy
import scipy.stats as st

from ksptrace.studies.variability import fastnll, fitting
from ksptrace.trace.read import read_trace
from tests.studies.variability.golden_values import FOLDER

FAMILIES = sorted(fastnll.REPLACEMENTS)
CHECKED = pytest.mark.skipif(not scipy.__version__.startswith(fastnll.CHECKED_SCIPY),
                             reason=f"the twins follow scipy {fastnll.CHECKED_SCIPY}, not "
                                    f"{scipy.__version__} (scipy's own function is used)")
TRACES = sorted(FOLDER.glob("*.h5"))


def _standardised(path: Path) -> np.ndarray:
    x = np.asarray(read_trace(path).iteration_seconds, dtype=np.float64).ravel()
    centre, spread = fitting._standardiser(x)
    return (x - centre) / spread


def _bits(value: float) -> bytes:
    return np.float64(value).tobytes()


@CHECKED
@pytest.mark.parametrize("name", FAMILIES)
def test_the_twin_gives_scipys_bits_inside_and_outside_the_support(name: str) -> None:
    dist = getattr(st, name)
    twin = fastnll.replacement(dist)
    assert twin is not None
    rng = np.random.default_rng(7)
    compared = penalised = 0
    for path in TRACES[:2]:
        z = _standardised(path)
        start = np.asarray(dist._fitstart(z), dtype=np.float64)
        for _ in range(400):
            # Around scipy's start, with steps large enough to push values out of the support
            # and shapes and scales through zero.
            theta = start + rng.normal(0.0, 1.0, start.size) * np.maximum(np.abs(start), 0.5)
            with np.errstate(all="ignore"):
                mine, scipys = twin(theta, z), dist._penalized_nnlf(theta, z)
            assert _bits(mine) == _bits(scipys), (theta, mine, scipys)
            compared += 1
            penalised += bool(np.isfinite(scipys) and scipys > 1e5)
    assert compared == 800
    assert penalised > 0, "no point outside the support was compared"


@CHECKED
@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("path", TRACES[:3], ids=[p.stem for p in TRACES[:3]])
def test_a_fit_with_the_twin_is_scipys_fit_to_the_bit(
        name: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.asarray(read_trace(path).iteration_seconds, dtype=np.float64).ravel()
    hist = fitting.histogram(x)
    fast = fitting.fit_one(name, x, hist)
    monkeypatch.setattr(fastnll, "replacement", lambda dist: None)
    slow = fitting.fit_one(name, x, hist)
    assert fast == slow


@CHECKED
def test_a_twin_that_differs_at_the_start_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    z = _standardised(TRACES[0])
    dist = st.gamma
    start = np.asarray(dist._fitstart(z), dtype=np.float64)
    assert fastnll.objective(dist, dist._penalized_nnlf, start, z) is not dist._penalized_nnlf
    check, support, logpdf = fastnll.REPLACEMENTS["gamma"]
    off = (check, support, lambda x, a: logpdf(x, a) + 1e-9)
    monkeypatch.setitem(fastnll.REPLACEMENTS, "gamma", off)
    assert fastnll.objective(dist, dist._penalized_nnlf, start, z) == dist._penalized_nnlf


@CHECKED
def test_another_scipy_release_keeps_scipys_function(monkeypatch: pytest.MonkeyPatch) -> None:
    z = _standardised(TRACES[0])
    start = np.asarray(st.gamma._fitstart(z), dtype=np.float64)
    assert fastnll.objective(st.gamma, st.gamma._penalized_nnlf, start, z) is not (
        st.gamma._penalized_nnlf)
    monkeypatch.setattr(fastnll.scipy, "__version__", "1.14.1")
    assert fastnll.objective(st.gamma, st.gamma._penalized_nnlf, start, z) == (
        st.gamma._penalized_nnlf)


def test_families_without_a_twin_and_bad_data_keep_scipys_function() -> None:
    z = _standardised(TRACES[0])
    start = np.asarray(st.norm._fitstart(z), dtype=np.float64)
    assert fastnll.objective(st.norm, st.norm._penalized_nnlf, start, z) == st.norm._penalized_nnlf
    bad = z.copy()
    bad[3] = np.nan
    assert (fastnll.objective(st.gamma, st.gamma._penalized_nnlf, start, bad)
            == st.gamma._penalized_nnlf)


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_the_ks_distance_is_scipys_statistic_to_the_bit(path: Path) -> None:
    x = np.asarray(read_trace(path).iteration_seconds, dtype=np.float64).ravel()
    for fit in fitting.fit_candidates(x).fits:
        frozen = fit.frozen()
        assert fit.ks == float(st.kstest(x, frozen.cdf).statistic)
        assert fitting.ks_distance(x[::3], frozen.cdf) == float(
            st.kstest(x[::3], frozen.cdf).statistic)
