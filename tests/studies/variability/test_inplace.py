"""The functions on floats give the twins' bits (so scipy's), and fits with them are scipy's
fits to the bit; the optimiser's own centroid and order are numpy's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy
import scipy.stats as st

from ksptrace.studies.variability import fastnll, fitting, inplace, neldermead
from ksptrace.trace.read import read_trace
from tests.studies.variability.test_fastnll import TRACES, _bits, _standardised

FAMILIES = sorted(inplace.KERNELS)
CHECKED = pytest.mark.skipif(not scipy.__version__.startswith(fastnll.CHECKED_SCIPY),
                             reason=f"the kernels follow scipy {fastnll.CHECKED_SCIPY}, not "
                                    f"{scipy.__version__} (scipy's own function is used)")
NUMPY = pytest.mark.skipif(not np.__version__.startswith(neldermead.CHECKED_NUMPY),
                           reason=f"the order and centroid follow numpy {neldermead.CHECKED_NUMPY}"
                                  f", not {np.__version__} (numpy's own are used)")


def _edges(name: str, start: np.ndarray) -> list[np.ndarray]:
    """Points the fast path must hand over: shapes at numpy's fast powers and genextreme's
    special values, zero, negative, infinite and NaN scales and locations."""
    out = []
    for k in range(start.size):
        for v in (0.0, 0.5, 1.0, 2.0, -1.0, math.inf, -math.inf, math.nan, 1e-300, 1e300):
            p = start.copy()
            p[k] = v
            out.append(p)
    return out


@CHECKED
@pytest.mark.parametrize("name", FAMILIES)
def test_the_kernel_gives_the_twins_bits_everywhere(name: str) -> None:
    dist = getattr(st, name)
    twin = fastnll.replacement(dist)
    assert twin is not None
    rng = np.random.default_rng(11)
    fast = penalised = 0
    for path in TRACES[:2]:
        z = _standardised(path)
        start = np.asarray(dist._fitstart(z), dtype=np.float64)
        f = inplace.KERNELS[name](z, twin)
        near = [start * (1 + rng.normal(0.0, 0.02, start.size)) for _ in range(300)]
        far = [start + rng.normal(0.0, 1.0, start.size) * np.maximum(np.abs(start), 0.5)
               for _ in range(300)]
        for theta in near + far + _edges(name, start):
            with np.errstate(all="ignore"):
                mine = f([float(v) for v in theta])
                want = dist._penalized_nnlf(theta, z)
            assert _bits(mine) == _bits(want), (theta, mine, want)
            value = float(want)
            fast += bool(math.isfinite(value) and value < 1e5)
            penalised += bool(math.isfinite(value) and value > 1e5)
    assert fast > 300, "too few points inside the support were compared"
    assert penalised > 0, "no point outside the support was compared"


@CHECKED
@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("path", TRACES[:3], ids=[p.stem for p in TRACES[:3]])
def test_a_fit_with_the_kernel_is_the_fit_without_it(
        name: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.asarray(read_trace(path).iteration_seconds, dtype=np.float64).ravel()
    hist = fitting.histogram(x)
    calls: list[str] = []
    real = inplace.kernel

    def counted(*args: object) -> inplace.OnFloats | None:
        made = real(*args)  # type: ignore[arg-type]
        calls.append("kernel" if made is not None else "none")
        return made

    monkeypatch.setattr(fitting, "kernel", counted)
    fast = fitting.fit_one(name, x, hist)
    assert calls == ["kernel"]
    monkeypatch.setattr(fitting, "kernel", lambda *args: None)
    slow = fitting.fit_one(name, x, hist)
    assert fast == slow


def test_a_kernel_that_differs_at_the_start_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    z = np.linspace(-2.0, 3.0, 50)
    dist = st.johnsonsu
    twin = fastnll.replacement(dist)
    assert twin is not None
    x0 = np.array([0.1, 1.2, 0.0, 1.0])
    assert inplace.kernel("johnsonsu", twin, x0, z) is not None
    monkeypatch.setitem(inplace.KERNELS, "johnsonsu",
                        lambda z, twin: lambda p: float(twin(np.array(p), z)) + 1e-12)
    assert inplace.kernel("johnsonsu", twin, x0, z) is None
    assert inplace.kernel("norm", twin, x0, z) is None  # no kernel for the family


@NUMPY
def test_the_order_is_numpys_argsort_with_ties_infinities_and_nan() -> None:
    rng = np.random.default_rng(3)
    pool = [0.0, -0.0, 1.0, 1.0, -2.5, math.inf, -math.inf, math.nan, math.nan, 3.0]
    for size in range(1, 17):
        for _ in range(300):
            values = [float(v) for v in rng.choice(pool + list(rng.normal(size=3)), size)]
            want = np.argsort(np.array(values, dtype=np.float64)).tolist()
            assert neldermead._order(values) == want, values


@NUMPY
def test_settling_the_last_value_is_numpys_argsort_of_the_rest_ordered() -> None:
    rng = np.random.default_rng(4)
    pool = [0.0, -0.0, 1.0, 1.0, -2.5, math.inf, -math.inf, math.nan, 3.0]
    for size in range(1, 7):
        for _ in range(500):
            values = [float(v) for v in rng.choice(pool + list(rng.normal(size=2)), size)]
            prefix = sorted(values[:-1], key=lambda v: (v != v, v))  # ordered, as fmin keeps it
            fsim = [*prefix, values[-1]]
            sim = [[float(i)] for i in range(size)]  # each vertex named by its place
            want = np.argsort(np.array(fsim, dtype=np.float64)).tolist()
            neldermead._settle_last(sim, fsim)
            assert [int(row[0]) for row in sim] == want, values
            assert np.array(fsim).tobytes() == np.array(
                [[*prefix, values[-1]][i] for i in want]).tobytes()


@NUMPY
def test_the_centroid_is_numpys_reduction_to_the_bit() -> None:
    rng = np.random.default_rng(5)
    for rows in range(1, 7):
        for _ in range(2000):
            sim = (rng.normal(size=(rows, 4)) * 10.0 ** rng.integers(-12, 12, (rows, 4))).tolist()
            want = (np.add.reduce(np.array(sim), 0) / rows).tolist()
            got = neldermead._centroid(sim)
            assert np.array(got).tobytes() == np.array(want).tobytes(), sim


def test_another_numpy_uses_numpys_own_order_and_centroid(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neldermead, "_OWN", False)
    values = [2.0, math.nan, -1.0, 2.0]
    assert neldermead._order(values) == np.argsort(np.array(values)).tolist()
    sim = [[1.0, 2.0], [3.0, 5.0]]
    assert neldermead._centroid(sim) == [2.0, 3.5]
