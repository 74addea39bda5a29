"""neldermead.fmin visits scipy's points: the same result bits and the same stopping reason as
``scipy.optimize.fmin`` on every family's likelihood of the golden traces, and on functions
with infinite, NaN and tied values, zeros in the start, and both limits."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy
import scipy.stats as st
from scipy import optimize

from ksptrace.studies.variability import fastnll, fitting, neldermead
from ksptrace.trace.read import read_trace
from tests.studies.variability.golden_values import FOLDER

CHECKED = pytest.mark.skipif(not scipy.__version__.startswith(fastnll.CHECKED_SCIPY),
                             reason=f"fmin follows scipy {fastnll.CHECKED_SCIPY}, not "
                                    f"{scipy.__version__} (scipy's own fmin is used)")
FAMILIES = ("johnsonsu", "lognorm", "gamma", "genextreme", "exponweib", "nct")


def _same(func: Callable[..., Any], x0: Any, args: tuple[Any, ...] = ()) -> int:
    """Assert both optimisers give the same bits and flag; the flag."""
    want, _f, _it, _calls, flag = optimize.fmin(func, x0, args=args, disp=0, full_output=True)
    got, got_flag = neldermead.fmin(func, x0, args)
    assert got.dtype == np.float64
    assert got.shape == np.shape(want)
    assert got.tobytes() == np.asarray(want, dtype=np.float64).tobytes(), (want, got)
    assert got_flag == flag
    return int(flag)


def _problems(name: str, z: np.ndarray) -> tuple[Callable[..., Any], np.ndarray]:
    """The objective and start ``rv_continuous.fit`` hands its optimizer."""
    seen: list[tuple[Any, Any]] = []

    def capture(func: Any, x0: Any, args: tuple[Any, ...] = (), disp: int = 0) -> Any:
        seen.append((func, x0))
        return x0

    getattr(st, name).fit(z, optimizer=capture)
    return seen[0]


@CHECKED
@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("path", sorted(FOLDER.glob("*.h5")), ids=lambda p: Path(p).stem)
def test_each_familys_fit_of_a_golden_trace_is_scipys(name: str, path: Path) -> None:
    x = np.asarray(read_trace(path).iteration_seconds, dtype=np.float64).ravel()
    x = fitting.subsample(x, 600 if name == "nct" else None)
    centre, spread = fitting._standardiser(x)
    z = (x - centre) / spread
    func, x0 = _problems(name, z)
    twin = fastnll.objective(getattr(st, name), func, x0, z)
    with np.errstate(all="ignore"):
        _same(twin, x0, (z,))


def _rosenbrock(x: np.ndarray) -> float:
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def test_the_limits_and_convergence_are_scipys() -> None:
    flags = {_same(_rosenbrock, np.array(x0)) for x0 in
             ([-1.2, 1.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5, 3.0], [1e3, -1e3])}
    assert flags == {0, 1}  # some converge, some stop at the evaluation limit


def test_infinite_nan_and_tied_values_are_ordered_as_numpy_orders_them() -> None:
    def walls(x: np.ndarray) -> float:
        if x[0] < 0:
            return math.inf
        if x[1] > 2:
            return math.nan
        return float(round(float((x[0] - 1) ** 2 + (x[1] - 0.5) ** 2), 2))  # plateaus: ties

    for x0 in ([0.0, 0.0], [0.5, 1.9], [3.0, 0.0], [0.0, 2.5]):
        _same(walls, np.array(x0))
    _same(lambda x: 1.0, np.array([0.0, 1.0, 2.0]))  # every value tied
    _same(lambda x: math.nan, np.array([1.0, 2.0]))  # never comparable: runs to a limit


def test_the_evaluation_limit_mid_shrink_is_scipys() -> None:
    def rough(x: np.ndarray) -> float:  # a rough landscape: many shrinks, the limit hit
        return float(np.sin(40 * x[0]) * np.cos(37 * x[1]) + 1e-3 * x @ x)

    for x0 in ([0.3, -0.2], [1.0, 1.0], [0.0, 5.0]):
        _same(rough, np.array(x0))


def test_the_convergence_test_is_scipys_on_nan_inf_and_ties() -> None:
    """scipy's test: max |sim[1:] - sim[0]| <= xatol and max |fsim[0] - fsim[1:]| <= fatol,
    where a NaN anywhere makes numpy's max NaN and the test False."""
    rng = np.random.default_rng(11)
    specials = [math.nan, math.inf, -math.inf, 0.0, 5e-5, 1e-4, 2e-4]
    checked = 0
    for _ in range(4000):
        n = int(rng.integers(2, 5))
        sim = rng.normal(0, 2e-5, (n + 1, n))
        fsim = rng.normal(0, 2e-5, n + 1)
        for _ in range(int(rng.integers(0, 3))):  # a few special values
            target = sim if rng.random() < 0.5 else fsim
            flat = target.reshape(-1)
            flat[int(rng.integers(flat.size))] = specials[int(rng.integers(len(specials)))]
        with np.errstate(invalid="ignore"):
            scipys = bool(np.max(np.ravel(np.abs(sim[1:] - sim[0]))) <= neldermead.XATOL
                          and np.max(np.abs(fsim[0] - fsim[1:])) <= neldermead.FATOL)
        ours = neldermead._converged(sim.tolist(), fsim.tolist())
        assert ours == scipys, (sim, fsim)
        checked += scipys
    assert 200 < checked < 3800  # both answers were tested
