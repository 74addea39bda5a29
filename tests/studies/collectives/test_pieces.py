"""The closed-form table of piece fits agrees with scipy's non-negative least squares piece by
piece, and the partition is the cheapest one (checked by enumeration)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import nnls

from ksptrace.studies.collectives.pieces import partitions, piece_starts, piece_table


def _nnls_piece(m: np.ndarray, t: np.ndarray, w: np.ndarray, origin: float
                ) -> tuple[float, float, float]:
    scale = float(m.max() - origin) or 1.0
    columns = np.column_stack([w / t, w * ((m - origin) / scale) / t])
    coef, _ = nnls(columns, w)
    slope = float(coef[1] / scale)
    return float(coef[0]) - slope * origin, slope, float(np.sum((columns @ coef - w) ** 2))


@pytest.mark.parametrize("seed", range(6))
def test_the_closed_form_agrees_with_nnls(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = np.unique(np.round(2 ** rng.uniform(0, 20, 30)))
    # rising, falling and flat stretches, so that every face of the quadrant is the optimum
    t = 1e-6 * (1 + 0.5 * np.sin(np.log(m) * rng.uniform(0.5, 3))) * (1 + m / 2e5)
    w = rng.uniform(10, 100, m.size)
    table = piece_table(m, t, w, 2)
    for i in range(m.size - 1):
        for j in range(i + 2, m.size + 1):
            a, s, r = _nnls_piece(m[i:j], t[i:j], w[i:j], m[i] if i else 0.0)
            total = float(np.sum(w[i:j] ** 2))
            assert table.rss[i, j] == pytest.approx(r, abs=1e-9 * total)
            value = a + s * m[j - 1]
            assert table.intercept[i, j] + table.slope[i, j] * m[j - 1] == pytest.approx(
                value, rel=1e-7, abs=1e-12)
    assert np.isinf(table.rss[3, 4])
    assert np.isnan(table.slope[3, 4])


def test_the_partition_is_the_cheapest() -> None:
    rng = np.random.default_rng(7)
    n = 9
    cost = np.full((n, n + 1), np.inf)
    for i in range(n):
        for j in range(i + 2, n + 1):
            cost[i, j] = rng.uniform(0, 10)
    best = partitions(cost, 3)
    for k in range(len(best)):
        brute = min(sum(cost[a, b] for a, b in zip((0, *cut), (*cut, n), strict=True))
                    for cut in itertools.combinations(range(2, n - 1), k)
                    if all(b - a >= 2 for a, b in zip((0, *cut), (*cut, n), strict=True)))
        assert best[k][0][n] == pytest.approx(brute)
        starts = piece_starts(best, k, n)
        assert sum(cost[a, b] for a, b in zip(starts, (*starts[1:], n), strict=True)) == \
            pytest.approx(brute)
