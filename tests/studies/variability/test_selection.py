"""Quantiles by selection equal np.quantile to the bit, on every path (issue 35)."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.variability.stats import injected, penalty, selection
from ksptrace.studies.variability.stats.selection import (
    order_statistics,
    quantiles,
    sorted_quantiles,
)

QS = np.array([0.0, 0.001, 0.25, 0.5, 0.75, 0.99, 0.999, 1.0, 1 / 3])
SMALL = 1 << 16
"""The tests run the selection on arrays of about this size: the constants below are scaled down
with it (one test keeps the real ones)."""


@pytest.fixture(autouse=True)
def scaled_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selection, "SELECT_AT", SMALL)
    monkeypatch.setattr(selection, "SAMPLE", 1 << 11)
    monkeypatch.setattr(selection, "BLOCK", 1 << 12)  # many blocks per pass


def _arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = SMALL + 12_345
    rows = 256
    per_iteration = np.tile(np.linspace(1.0, 2.0, n // rows), rows)  # one pattern per row
    return {
        "normal": rng.standard_normal(n),
        "lognormal": rng.lognormal(-7.0, 0.4, n),
        "ties": np.round(rng.exponential(size=n), 2),
        "sorted": np.sort(rng.random(n)),
        "reversed": np.sort(rng.random(n))[::-1].copy(),
        "rows with an iteration pattern": per_iteration + 1e-3 * rng.random(per_iteration.size),
        "two values": rng.integers(0, 2, n).astype(float),
    }


def _selections(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many ranks each selection took (an empty list: np.quantile answered alone)."""
    selected: list[int] = []
    real = selection.order_statistics

    def spy(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        selected.append(ranks.size)
        return real(values, ranks)

    monkeypatch.setattr(selection, "order_statistics", spy)
    return selected


@pytest.mark.parametrize("name", list(_arrays(np.random.default_rng(0))))
def test_equal_to_numpy_to_the_bit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    x = _arrays(np.random.default_rng(0))[name]
    selected = _selections(monkeypatch)
    got = quantiles(x, QS)
    assert selected, "np.quantile answered: the selection was not tested"
    assert got.tobytes() == np.quantile(x, QS).tobytes()


def test_two_dimensional_input_is_all_values() -> None:
    x = np.random.default_rng(1).gamma(2.0, size=(256, 300))
    assert quantiles(x, [0.25, 0.5]).tobytes() == np.quantile(x, [0.25, 0.5]).tobytes()


def test_a_rank_outside_its_bracket_is_taken_from_the_whole_array(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Brackets too narrow to hold the ranks: every miss goes to the whole-array path, and the
    values are still numpy's."""
    monkeypatch.setattr(selection, "MARGIN", 0.0)
    monkeypatch.setattr(selection, "SLACK", 0)
    monkeypatch.setattr(selection, "SAMPLE", 16)
    whole = []
    real = selection._whole

    def spy(x: np.ndarray, rank: int) -> float:
        whole.append(rank)
        return real(x, rank)

    monkeypatch.setattr(selection, "_whole", spy)
    x = np.random.default_rng(2).standard_normal(SMALL + 1)
    assert quantiles(x, QS).tobytes() == np.quantile(x, QS).tobytes()
    assert whole, "no rank fell outside its bracket: the test does not reach the fallback"


def test_order_statistics_are_those_of_the_sorted_array() -> None:
    x = np.random.default_rng(3).standard_normal(SMALL)
    ranks = np.array([0, 1, 17, x.size // 2, x.size - 2, x.size - 1])
    assert np.array_equal(order_statistics(x, ranks), np.sort(x)[ranks])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_and_inf_follow_numpy(bad: float) -> None:
    x = np.random.default_rng(4).random(SMALL)
    x[123] = bad
    with np.errstate(invalid="ignore"):  # numpy's own inf - inf
        np.testing.assert_array_equal(quantiles(x, [0.5, 1.0]), np.quantile(x, [0.5, 1.0]))


def test_small_arrays_are_numpy_itself() -> None:
    x = np.random.default_rng(5).random(1000)
    assert quantiles(x, [0.1, 0.9]).tobytes() == np.quantile(x, [0.1, 0.9]).tobytes()


def test_penalty_spread_and_tail_unchanged_at_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """wait_penalty's spread and tail come from these quantiles, with the real constants: the
    same as from numpy's."""
    monkeypatch.undo()
    selected = _selections(monkeypatch)
    t = np.random.default_rng(6).lognormal(-7.0, 0.3, (512, selection.SELECT_AT // 512 + 1))
    p = penalty.wait_penalty(t, seed=0, resamples=4)
    assert p is not None
    assert selected == [8], "the penalty did not take the selection path"
    q25, q50, q75, q99 = np.quantile(t, [0.25, 0.5, 0.75, 0.99])
    assert p.spread_pct == float(100.0 * (q75 - q25) / q50)
    assert p.tail_pct == float(100.0 * (q99 / q50 - 1.0))


@pytest.mark.parametrize("name", list(_arrays(np.random.default_rng(0))))
@pytest.mark.parametrize("size", [1, 7, 2000, 100_000])
def test_sorted_quantiles_equal_numpy_to_the_bit(name: str, size: int) -> None:
    """The noise model's cell-midpoint quantiles (and the ends, 1/3, 0.999) of a sorted array,
    at sizes below, near and above the array's: numpy's values, bit for bit."""
    x = np.sort(_arrays(np.random.default_rng(0))[name][: 3 * size + 5])
    q = np.concatenate(((np.arange(size) + 0.5) / size, QS))
    assert sorted_quantiles(x, q).tobytes() == np.quantile(x, q).tobytes()


def test_sorted_quantiles_of_one_value() -> None:
    x = np.array([2.5])
    assert sorted_quantiles(x, QS).tobytes() == np.quantile(x, QS).tobytes()


def test_natural_sample_is_numpys_quantiles_of_the_sorted_times() -> None:
    """injected's reduction of the natural times: the same bits as np.quantile gave."""
    t = np.random.default_rng(7).lognormal(-7.0, 0.3, (4, 3000))
    q = (np.arange(injected.MAX_NATURAL_SAMPLES) + 0.5) / injected.MAX_NATURAL_SAMPLES
    want = np.quantile(np.sort(t.ravel()), q)
    assert injected.natural_sample(t).tobytes() == want.tobytes()


def test_natural_sample_with_nan_is_refused_as_before() -> None:
    """A NaN hidden past the last cell midpoint still reaches the check (numpy's path)."""
    t = np.random.default_rng(8).random(100_000)
    t[5] = np.nan
    assert np.isnan(injected.natural_sample(t)).all()
