"""Sorted rows (ordered.py) count, place axes and test ranks as the passes over raw values do."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.pages import figures
from ksptrace.studies.variability.pages.digest import LOG_EDGES, log_histogram
from ksptrace.studies.variability.pages.figures.per_run import density
from ksptrace.studies.variability.stats import ks
from ksptrace.studies.variability.stats.fitting import fit_candidates, histogram
from ksptrace.studies.variability.stats.ordered import log_thresholds, order_rows


def _times(kind: str, seed: int = 0) -> np.ndarray:
    """[P, K] times with the awkward values: at bin edges, ties, zeros, a long tail."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(-8.0, 1.0, size=(37, 401))
    if kind == "edges":  # values exactly on linear and log edges
        x[:3, :81] = np.linspace(1e-4, 3e-3, 81)
        x[3:6, :LOG_EDGES.size] = LOG_EDGES
        x[6, :LOG_EDGES.size] = log_thresholds(np.log10(LOG_EDGES))
    elif kind == "ties":  # a clock of 1 µs: many equal values
        x = np.round(x, 6)
    elif kind == "zeros":
        x[:, ::9] = 0.0
        x[5, :40] = 1e-10
    elif kind == "tail":
        x[:, ::50] *= 1e4
    return x


KINDS = ("edges", "ties", "zeros", "tail")
SPANS = ((80, 1e-4, 3e-3, False), (60, -6.0, -2.0, True), (120, -9.0, 3.0, True),
         (10, 2e-4, 2e-4, False), (40, 0.0, 1e-3, False), (50, -4.0, -4.0, True))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("span", SPANS)
def test_counts_on_sorted_rows_equal_the_blocked_histogram(kind: str, span: tuple) -> None:
    x = _times(kind)
    o = order_rows(x)
    bins, lo, hi, log = span
    for floor, ceiling in ((None, None), (1e-9, 1e-3), (None, 1e-4), (2e-4, None)):
        want = figures.binned_counts(x, bins, lo, hi, log=log, floor=floor, ceiling=ceiling)
        got = o.binned(bins, lo, hi, log=log, floor=floor, ceiling=ceiling)
        assert np.array_equal(got[0], want[0]), (floor, ceiling)
        assert got[1] == want[1]


@pytest.mark.parametrize("kind", KINDS)
def test_counts_equal_numpys_histogram_of_everything(kind: str) -> None:
    x = _times(kind, seed=1)
    o = order_rows(x)
    lo, hi = float(np.quantile(x, 0.01)), float(np.quantile(x, 0.99))
    want, _ = np.histogram(x.ravel(), bins=97, range=(lo, hi))
    assert np.array_equal(o.binned(97, lo, hi)[0], want)
    with np.errstate(divide="ignore"):
        logged, _ = np.histogram(np.log10(x.ravel()), bins=33, range=(-7.0, -2.0))
    assert np.array_equal(o.binned(33, -7.0, -2.0, log=True)[0], logged)


def test_log_thresholds_are_the_least_floats_whose_log_reaches_the_edge() -> None:
    e = np.concatenate([np.log10(LOG_EDGES), np.linspace(-9.0, 3.0, 997)])
    t = log_thresholds(e)
    assert (np.log10(t) >= e).all()
    assert (np.log10(np.nextafter(t, 0.0)) < e).all()


@pytest.mark.parametrize("kind", KINDS)
def test_time_axis_of_sorted_rows_is_the_axis_of_the_values(kind: str) -> None:
    x = _times(kind, seed=2)
    assert figures.time_axis(order_rows(x)) == figures.time_axis(x)
    assert figures.is_constant(order_rows(x)) == figures.is_constant(x)


def test_densities_digest_and_fit_histogram_on_sorted_rows_are_the_same() -> None:
    x = _times("tail", seed=3)
    o = order_rows(x)
    axis = figures.time_axis(x)
    for a, b in zip(density(o, axis, 80), density(x, axis, 80), strict=True):
        assert np.array_equal(a, b)
    got, want = log_histogram(o), log_histogram(x)
    assert np.array_equal(got.counts, want.counts)
    assert got.below == want.below
    h, g = histogram(x, 50, (1e-4, 1e-3)), histogram(x, 50, (1e-4, 1e-3), ordered=o)
    assert np.array_equal(h.edges, g.edges)
    assert np.array_equal(h.density, g.density)
    fa, fb = fit_candidates(x, ("norm", "lognorm")), fit_candidates(x, ("norm", "lognorm"),
                                                                   ordered=o)
    assert np.array_equal(fa.histogram.density, fb.histogram.density)
    assert [f.params for f in fa.fits] == [f.params for f in fb.fits]


def test_ks_on_sorted_rows_equals_the_ks_that_sorts() -> None:
    x = _times("ties", seed=4)
    o = order_rows(x, workers=2)
    for ref in (0, 5, 36):
        got = ks.one_vs_all(x, ref, ordered=o.rows)
        want = ks.one_vs_all(x, ref)
        assert np.array_equal(got.statistics, want.statistics)


def test_sorting_in_threads_equals_numpys_sort_and_is_read_only(monkeypatch) -> None:
    from ksptrace.studies.variability.stats import ordered

    monkeypatch.setattr(ordered, "SORT_BLOCK_ELEMENTS", 1000)  # several blocks
    x = _times("zeros", seed=5)
    x[3, 7] = -0.0
    o = order_rows(x, workers=2)
    assert np.array_equal(o.rows, np.sort(x, axis=1))
    assert o.raw is x or np.shares_memory(o.raw, x)
    assert not o.rows.flags.writeable
    assert o.min() == x.min()
    assert o.max() == x.max()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1e-6])
def test_times_that_cannot_be_sorted_as_times_are_refused(bad: float) -> None:
    x = _times("edges")
    x[4, 11] = bad
    with pytest.raises(AnalysisError, match="NaN, inf or a negative"):
        order_rows(x)


@pytest.mark.parametrize("kind", KINDS)
def test_quantiles_of_sorted_rows_are_numpys_bits(kind: str, monkeypatch) -> None:
    from ksptrace.studies.variability.stats import selection

    monkeypatch.setattr(selection, "SELECT_AT", 1000)  # the selection path at test size
    monkeypatch.setattr(selection, "SAMPLE", 512)
    x = _times(kind, seed=6)
    qs = [0.0, 0.001, 0.25, 0.5, 0.75, 0.99, 1.0]
    got = selection.quantiles(order_rows(x), qs)
    assert got.tobytes() == np.quantile(x, qs).tobytes()
    assert got.tobytes() == selection.quantiles(x, qs).tobytes()


def test_the_wait_penalty_on_sorted_rows_is_the_same() -> None:
    from ksptrace.studies.variability.stats.penalty import wait_penalty

    x = _times("tail", seed=7)
    assert wait_penalty(x, 3, ordered=order_rows(x)) == wait_penalty(x, 3)
