"""scipy's Nelder-Mead as ``rv_continuous.fit`` runs it, the same arithmetic on Python floats.

``scipy.optimize.fmin`` keeps its simplex of 3 to 5 points in numpy arrays of 3 or 4 numbers;
every step (the centroid, a reflection, the test for convergence, the sort) is a numpy call on
such a tiny array, about 20 µs of overhead per iteration beside the 30 µs of the objective on a
demo trace. :func:`fmin` performs the same IEEE operations on the same values in the same order
(``2 * xbar - x`` for the reflection and so on; the centroid and the order still numpy's own
``add.reduce`` and ``argsort``), so it visits the same points and returns the same bits
and the same stopping reason. It follows scipy 1.10 with its defaults (non-adaptive, no bounds,
``xatol = fatol = 1e-4``, 200 iterations and evaluations per parameter) and is used only with
it (``fastnll.CHECKED_SCIPY``); ``tests/studies/variability/test_neldermead.py`` compares the
two on every family's fits and on functions with NaN, infinite and tied values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

NONZDELT = 0.05
ZDELT = 0.00025
XATOL = 1e-4
FATOL = 1e-4


class _Exhausted(Exception):
    """The evaluation limit was reached (scipy's ``_MaxFuncCallError``)."""


def _converged(sim: list[list[float]], fsim: list[float]) -> bool:
    """scipy's test: every value within FATOL of the best, and every vertex within XATOL of the
    best in every coordinate. A NaN anywhere makes numpy's max NaN and the test False, as it
    makes a comparison here False."""
    fbest = fsim[0]
    if not all(abs(fbest - f) <= FATOL for f in fsim[1:]):
        return False
    best = sim[0]
    return all(abs(v - b) <= XATOL for row in sim[1:] for v, b in zip(row, best, strict=True))


def fmin(func: Callable[..., Any], x0: Any, args: tuple[Any, ...] = ()
         ) -> tuple[np.ndarray, int]:
    """``scipy.optimize.fmin(func, x0, args, full_output=True)``'s point and warning flag
    (0: converged, 1: evaluation limit, 2: iteration limit)."""
    start = [float(v) for v in np.asarray(x0, dtype=np.float64).ravel()]
    n = len(start)
    maxfun = maxiter = n * 200
    calls = 0

    def f(x: list[float]) -> float:
        nonlocal calls
        if calls >= maxfun:
            raise _Exhausted
        calls += 1
        value: Any = func(np.array(x, dtype=np.float64), *args)
        if not np.isscalar(value):  # scipy accepts np.array([v]) too
            value = np.asarray(value).item()
        return float(value)

    sim = [start]
    for k in range(n):
        y = list(start)
        y[k] = (1 + NONZDELT) * y[k] if y[k] != 0 else ZDELT
        sim.append(y)
    fsim = [math.inf] * (n + 1)

    def ordered() -> None:
        order = np.argsort(np.array(fsim, dtype=np.float64)).tolist()
        sim[:] = [sim[i] for i in order]
        fsim[:] = [fsim[i] for i in order]

    try:
        for k in range(n + 1):
            fsim[k] = f(sim[k])
    except _Exhausted:
        pass
    finally:
        ordered()
    ordered()
    iterations = 1
    while calls < maxfun and iterations < maxiter:
        try:
            if _converged(sim, fsim):
                break
            # numpy's own reduction: its order of additions over axis 0 is numpy's to choose
            xbar = (np.add.reduce(np.array(sim[:-1], dtype=np.float64), 0) / n).tolist()
            worst = sim[-1]
            xr = [2 * b - 1 * w for b, w in zip(xbar, worst, strict=True)]
            fxr = f(xr)
            shrink = False
            if fxr < fsim[0]:
                xe = [3 * b - 2 * w for b, w in zip(xbar, worst, strict=True)]
                fxe = f(xe)
                sim[-1], fsim[-1] = (xe, fxe) if fxe < fxr else (xr, fxr)
            elif fxr < fsim[-2]:
                sim[-1], fsim[-1] = xr, fxr
            elif fxr < fsim[-1]:
                xc = [1.5 * b - 0.5 * w for b, w in zip(xbar, worst, strict=True)]
                fxc = f(xc)
                if fxc <= fxr:
                    sim[-1], fsim[-1] = xc, fxc
                else:
                    shrink = True
            else:
                xcc = [0.5 * b + 0.5 * w for b, w in zip(xbar, worst, strict=True)]
                fxcc = f(xcc)
                if fxcc < fsim[-1]:
                    sim[-1], fsim[-1] = xcc, fxcc
                else:
                    shrink = True
            if shrink:
                best = sim[0]
                for j in range(1, n + 1):
                    sim[j] = [b + 0.5 * (v - b) for b, v in zip(best, sim[j], strict=True)]
                    fsim[j] = f(sim[j])
            iterations += 1
        except _Exhausted:
            pass
        finally:
            ordered()
    flag = 1 if calls >= maxfun else 2 if iterations >= maxiter else 0
    return np.array(sim[0], dtype=np.float64), flag
