"""The table of reference counts (refindex.py) gives np.searchsorted's counts, and the KS tests
that use it the same statistics as scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.variability.stats import ks, refindex
from ksptrace.studies.variability.stats.ordered import order_rows


def _sample(kind: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = rng.lognormal(-8.0, 0.7, size=500)
    values = rng.lognormal(-8.0, 0.7, size=(9, 500))
    if kind == "ties":  # a 1 µs clock: values equal to reference values, and repeated
        ref, values = np.round(ref, 6), np.round(values, 6)
        values[1, :100] = ref[:100]
    elif kind == "zeros":
        ref[::7] = 0.0
        values[:, ::5] = 0.0
    elif kind == "subnormal":
        ref[:50] = 5e-324 * rng.integers(1, 100, size=50)
        values[:, :80] = 5e-324 * rng.integers(1, 100, size=(9, 80))
    elif kind == "constant":
        ref[:] = 1e-3
        values[:] = 1e-3
    return np.sort(ref), np.sort(values, axis=1)


KINDS = ("plain", "ties", "zeros", "subnormal", "constant")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell_bits", [4, 12, 20])
def test_counts_equal_numpys_binary_search(kind: str, cell_bits: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refindex, "CELL_BITS", cell_bits)  # few cells: most hold a ref value
    ref, values = _sample(kind)
    lo, hi = min(values.min(), ref[0]), max(values.max(), ref[-1])
    index = refindex.ref_index(ref, lo, hi)
    assert index is not None
    c, where, left = index.counts(values)
    assert np.array_equal(c, np.searchsorted(ref, values, side="right"))
    lefts = np.searchsorted(ref, values, side="left").reshape(-1)
    assert np.array_equal(left, lefts[where])
    others = np.setdiff1d(np.arange(values.size), where)
    assert np.array_equal(lefts[others], c.reshape(-1)[others])  # no ref value in their cell


def test_no_index_where_the_bits_do_not_order_as_the_values() -> None:
    ref = np.array([-0.0, 1.0, 2.0])
    assert refindex.ref_index(ref, -0.0, 2.0) is None
    assert refindex.ref_index(np.array([-1.0, 1.0]), -1.0, 1.0) is None


@pytest.mark.parametrize("kind", KINDS)
def test_ks_through_the_index_equals_scipy(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(refindex, "CELL_BITS", 8)
    rng = np.random.default_rng(3)
    _, values = _sample(kind, seed=4)
    x = rng.permuted(values, axis=1)  # as recorded: not in order
    o = order_rows(x)
    want = ks.one_vs_all(x, 2, ordered=o.rows)  # fewer values than INDEX_ELEMENTS: no index
    monkeypatch.setattr(ks, "INDEX_ELEMENTS", 0)
    got = ks.one_vs_all(x, 2, ordered=o.rows)
    assert np.array_equal(got.statistics, want.statistics)
    expected = [st.ks_2samp(x[2], x[q]).statistic for q in got.others]
    assert np.abs(got.statistics - expected).max() <= 1e-12
