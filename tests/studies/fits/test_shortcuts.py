"""The engine's shortcuts give the numbers of the work they skip, to the bit: the starting
quartiles made once per family, a trial step evaluated once when its shortened twin equals it,
the cell probabilities written into one array, the Jacobi rotations on rows, and the Newton
steps of every damping and the starts' thetas each in one vectorised evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.fits import FAMILIES, Family, binned, cdfs, equal_count_cells, family
from ksptrace.studies.fits import engine as engine_module
from ksptrace.studies.fits import search as search_module
from ksptrace.studies.fits.binned import FLOOR, Binned, cell_probabilities, divergence
from ksptrace.studies.fits.families import EXPONWEIB_AT_EDGE, GAMMA_AT_EDGE
from ksptrace.studies.fits.search import Objective, _inside, _trial_values


def _sample(seed: int = 5) -> Binned:
    x = st.johnsonsu(-1.0, 1.5, 1e-4, 2e-5).rvs(size=3000, random_state=np.random.default_rng(seed))
    return binned(*equal_count_cells(np.sort(x)))


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_grid_quartiles_are_scipys_ppf_at_every_grid_shape(name: str) -> None:
    fam = family(name)
    u, edge = engine_module._grid_quartiles(fam.name, fam.grid)
    grid = np.array(fam.grid, dtype=np.float64)
    dist = getattr(st, name)
    for i, shapes in enumerate(grid):
        with np.errstate(all="ignore"):
            want = dist.ppf([0.25, 0.5, 0.75], *shapes)
        np.testing.assert_array_equal(u[i], want)
        assert edge[i] == dist.support(*shapes)[0]
    assert engine_module._grid_quartiles(fam.name, fam.grid) is engine_module._grid_quartiles(
        fam.name, fam.grid)  # made once
    assert not u.flags.writeable  # shared between fits: no fit may change it


def _trials(obj: Objective, x: np.ndarray, scale: float) -> tuple[np.ndarray, int]:
    steps = scale * np.random.default_rng(2).standard_normal((21, x.size))
    clipped = np.clip(x + steps, obj.lower, obj.upper)
    return np.vstack((clipped, _inside(x, steps, obj.lower, obj.upper))), clipped.shape[0]


@pytest.mark.parametrize("name", ["johnsonsu", "gamma", "exponweib", "genextreme", "norm"])
@pytest.mark.parametrize("scale", [1e-3, 30.0])  # inside the box; most steps leave it
def test_trial_values_equal_evaluating_every_row(name: str, scale: float) -> None:
    data = _sample()
    fam = family(name)
    obj = Objective(fam, data)
    x = engine_module.starts(fam, data)[0]
    trials, half = _trials(obj, x, scale)
    moved = int(np.count_nonzero(np.any(trials[half:] != trials[:half], axis=1)))
    before = obj.evaluations
    got = _trial_values(obj, trials, half)
    assert obj.evaluations - before == half + moved
    want = Objective(fam, data).values(trials)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    if scale < 1:
        assert moved == 0  # every twin was skipped
    else:
        assert moved > 0


def _cells_by_differences(fam: object, data: Binned, theta: np.ndarray) -> np.ndarray:
    """The cell probabilities as first written: differences of concatenated arrays."""
    p = fam.natural(theta, data.anchor)  # type: ignore[attr-defined]
    loc, scale = p[:, -2:-1], p[:, -1:]
    shapes = tuple(p[:, i:i + 1] for i in range(p.shape[1] - 2))
    m, rows = data.split, p.shape[0]
    with np.errstate(all="ignore"):
        low = fam.cdf((data.edges[None, :m] - loc) / scale, shapes)  # type: ignore[attr-defined]
        high = fam.sf((data.edges[None, m:] - loc) / scale, shapes)  # type: ignore[attr-defined]
        zeros = np.zeros((rows, 1))
        below = np.diff(np.concatenate((zeros, low), axis=1), axis=1)
        above = -np.diff(np.concatenate((high, zeros), axis=1), axis=1)
        middle = (1.0 - (low[:, -1:] if m else zeros)
                  - (high[:, :1] if m < data.edges.size else zeros))
    return np.concatenate((below, middle, above), axis=1)


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("where", ["both", "all above", "all below"])
def test_cell_probabilities_equal_their_differences(name: str, where: str) -> None:
    data = _sample()
    if where != "both":  # every edge on one side of the split (the middle cell at an end)
        shift = 1.0 + data.edges.max() if where == "all below" else 1.0 - data.edges.min()
        data = Binned(data.edges + (-shift if where == "all below" else shift), data.counts,
                      data.centre, data.spread)
        assert data.split in (0, data.edges.size)
    fam = family(name)
    x = engine_module.starts(fam, data)
    theta = np.vstack((x, x + 0.3 * np.random.default_rng(4).standard_normal(x.shape)))
    got = cell_probabilities(fam, data, theta)
    want = _cells_by_differences(fam, data, theta)
    # equal to the bit, but for the sign of an empty cell's zero (never read: p is floored)
    np.testing.assert_array_equal(_bits(got + 0.0), _bits(want + 0.0))


def _eigen_by_indices(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cyclic Jacobi rotations as first written, index by index."""
    d = h.shape[0]
    a = [[float(h[i][j]) for j in range(d)] for i in range(d)]
    v = [[1.0 if i == j else 0.0 for j in range(d)] for i in range(d)]
    for _sweep in range(50):
        off = sum(a[i][j] * a[i][j] for i in range(d) for j in range(d) if i != j)
        scale = sum(a[i][i] * a[i][i] for i in range(d))
        if off <= 1e-30 * max(scale, 1e-300):
            break
        for p in range(d - 1):
            for q in range(p + 1, d):
                if a[p][q] == 0.0:
                    continue
                theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(d):
                    akp, akq = a[k][p], a[k][q]
                    a[k][p], a[k][q] = c * akp - s * akq, s * akp + c * akq
                for k in range(d):
                    apk, aqk = a[p][k], a[q][k]
                    a[p][k], a[q][k] = c * apk - s * aqk, s * apk + c * aqk
                for k in range(d):
                    vkp, vkq = v[k][p], v[k][q]
                    v[k][p], v[k][q] = c * vkp - s * vkq, s * vkp + c * vkq
    lam = np.array([a[i][i] for i in range(d)])
    order = np.argsort(lam, kind="stable")
    return lam[order], np.array(v)[:, order]


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_eigen_equals_its_index_by_index_form(d: int) -> None:
    rng = np.random.default_rng(d)
    for _ in range(200):
        m = rng.standard_normal((d, d)) * 10.0 ** rng.integers(-8, 8)
        h = m + m.T
        if rng.random() < 0.2:
            h[0, -1] = h[-1, 0] = 0.0  # a pair already rotated away
        got, want = search_module.eigen(h), _eigen_by_indices(h)
        np.testing.assert_array_equal(_bits(got[0]), _bits(want[0]))
        np.testing.assert_array_equal(_bits(got[1]), _bits(want[1]))


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_newton_steps_are_newton_step_at_each_floor(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(100):
        d = k + int(rng.integers(0, 2))  # some parameters held: vec padded with zero rows
        lam = np.sort(rng.standard_normal(k) * 10.0 ** rng.integers(-6, 4))
        vec = np.zeros((d, k))
        vec[:k] = np.linalg.qr(rng.standard_normal((k, k)))[0]
        g = rng.standard_normal(d)
        floors = abs(float(rng.standard_normal())) * 16.0 ** np.arange(5)
        got = search_module.newton_steps(lam, vec, g, floors)
        for row, floor in zip(got, floors, strict=True):
            np.testing.assert_array_equal(
                _bits(row), _bits(search_module.newton_step(lam, vec, g, float(floor))))


def _theta_one_row(fam: Family, params: np.ndarray, anchor: float) -> np.ndarray:
    """``Family.theta`` as first written, on one row."""
    p = np.asarray(params, dtype=np.float64).copy()
    if fam.from_scipy is not None:
        p = fam.from_scipy(p[None, :])[0]
    for i, pos in enumerate(fam.positive):
        if pos:
            p[i] = np.log(p[i])
    if fam.edge_loc:
        gap = anchor - p[-2]
        p[-2] = np.log(gap) if gap > 0 else np.nan
    p[-1] = np.log(p[-1])
    if fam.coshed:
        p[-1] += cdfs.log_cosh(p[0])
    return p


@pytest.mark.parametrize("fam", [*FAMILIES.values(), GAMMA_AT_EDGE, EXPONWEIB_AT_EDGE],
                         ids=lambda f: f"{f.name}{'-edge' if f.edge_loc else ''}")
def test_thetas_are_theta_of_each_row(fam: Family) -> None:
    rng = np.random.default_rng(len(fam.name))
    grid = np.array(fam.grid, dtype=np.float64).reshape(len(fam.grid), -1)
    rows = np.column_stack((np.repeat(grid, 8, axis=0),
                            rng.normal(0.0, 2.0, 8 * len(grid)),  # loc, some above the anchor
                            rng.lognormal(0.0, 1.0, 8 * len(grid))))
    got = fam.thetas(rows, 1.0)
    with np.errstate(all="ignore"):
        want = np.array([_theta_one_row(fam, r, 1.0) for r in rows])
    np.testing.assert_array_equal(_bits(got), _bits(want))
    assert np.isnan(got).any() == (fam.edge_loc and bool((rows[:, -2] >= 1.0).any()))


@pytest.mark.parametrize("name", list(FAMILIES))
def test_divergence_in_place_equals_its_expression(name: str) -> None:
    """The divergence computed in place in the cell probabilities' array: the same bits as the
    expression it replaced (each row summed in order), inf where that was not finite (a row
    of NaN parameters included)."""
    data = _sample()
    fam = family(name)
    x = engine_module.starts(fam, data)
    theta = np.vstack((x, x + 0.3 * np.random.default_rng(6).standard_normal(x.shape),
                       np.full((1, fam.size), np.nan)))
    p = cell_probabilities(fam, data, theta)[:, data.used]
    with np.errstate(all="ignore"):
        want = data.entropy - (np.log(np.maximum(p, FLOOR)) * data.weights).sum(axis=1)
    want = np.where(np.isfinite(want) & ~np.isnan(theta).any(axis=1), want, np.inf)
    got = divergence(fam, data, theta)
    np.testing.assert_array_equal(_bits(got), _bits(want))
