"""The engine's shortcuts give the numbers of the work they skip: the starting quartiles made
once per family, a trial step evaluated once when its shortened twin equals it, and the cell
probabilities written into one array."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.fits import FAMILIES, binned, equal_count_cells, family
from ksptrace.studies.fits import engine as engine_module
from ksptrace.studies.fits.binned import Binned, cell_probabilities
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
