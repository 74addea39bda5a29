"""scipy's Nelder-Mead as ``rv_continuous.fit`` runs it, the same arithmetic on Python floats.

``scipy.optimize.fmin`` keeps its simplex of 3 to 5 points in numpy arrays of 3 or 4 numbers;
every step (the centroid, a reflection, the test for convergence, the sort) is a numpy call on
such a tiny array, about 20 µs of overhead per iteration beside the 30 µs of the objective on a
demo trace. :func:`fmin` performs the same IEEE operations on the same values in the same order
(``2 * xbar - x`` for the reflection and so on), so it visits the same points and returns the
same bits and the same stopping reason. It follows scipy 1.10 with its defaults (non-adaptive,
no bounds, ``xatol = fatol = 1e-4``, 200 iterations and evaluations per parameter) and is used
only with it (``fastnll.CHECKED_SCIPY``); ``tests/studies/variability/test_neldermead.py``
compares the two on every family's fits and on functions with NaN, infinite and tied values.

The centroid and the order are numpy's: ``add.reduce`` over axis 0 adds the rows one after the
other, and ``argsort`` of at most 16 values is an insertion sort, stable, NaN last. With the
numpy release that was checked (CHECKED_NUMPY) both are done on the floats in the same way;
with another, by numpy itself.
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


CHECKED_NUMPY = ("1.24.",)
"""numpy releases whose axis-0 reduction and small argsort :func:`_centroid` and :func:`_order`
follow (tests compare them); with another release numpy's own are called."""
_OWN = np.__version__.startswith(CHECKED_NUMPY)


def _nan_last(v: float) -> tuple[bool, float]:
    return (v != v, v)


def _order(values: list[float]) -> list[int]:
    """``np.argsort(values)`` for at most 16 values."""
    if _OWN and len(values) <= 16:
        return sorted(range(len(values)), key=lambda i: _nan_last(values[i]))
    order: list[int] = np.argsort(np.array(values, dtype=np.float64)).tolist()
    return order


def _settle_last(sim: list[list[float]], fsim: list[float]) -> None:
    """Order ``fsim`` (and ``sim``) as ``np.argsort`` would when only the last value changed
    since they were ordered: its insertion sort leaves the ordered prefix as it is and moves
    the last value before every value it is less than (NaN after every number)."""
    v = fsim[-1]
    j = len(fsim) - 1
    while j > 0 and (v < fsim[j - 1] or (fsim[j - 1] != fsim[j - 1] and v == v)):
        j -= 1
    if j < len(fsim) - 1:
        fsim.insert(j, fsim.pop())
        sim.insert(j, sim.pop())


def _centroid(rows: list[list[float]]) -> list[float]:
    """``np.add.reduce(np.array(rows), 0) / len(rows)``."""
    n = len(rows)
    if not _OWN:
        centre: list[float] = (np.add.reduce(np.array(rows, dtype=np.float64), 0) / n).tolist()
        return centre
    out = []
    for column in zip(*rows, strict=False):  # rows of one length: the simplex's
        total = column[0]
        for v in column[1:]:
            total += v
        out.append(total / n)
    return out


class _Exhausted(Exception):
    """The evaluation limit was reached (scipy's ``_MaxFuncCallError``)."""


def _converged(sim: list[list[float]], fsim: list[float]) -> bool:
    """scipy's test: every value within FATOL of the best, and every vertex within XATOL of the
    best in every coordinate. A NaN anywhere makes numpy's max NaN and the test False, as it
    makes a comparison here False."""
    fbest = fsim[0]
    for f in fsim[1:]:  # loops, not all() of a generator: 1 µs of a 3 µs iteration
        if not abs(fbest - f) <= FATOL:
            return False
    best = sim[0]
    for row in sim[1:]:
        for v, b in zip(row, best, strict=False):
            if not abs(v - b) <= XATOL:
                return False
    return True


def _on_array(func: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[list[float]], float]:
    def evaluate(x: list[float]) -> float:
        value: Any = func(np.array(x, dtype=np.float64), *args)
        if not np.isscalar(value):  # scipy accepts np.array([v]) too
            value = np.asarray(value).item()
        return float(value)
    return evaluate


def fmin(func: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
         floats: Callable[[list[float]], float] | None = None) -> tuple[np.ndarray, int]:
    """``scipy.optimize.fmin(func, x0, args, full_output=True)``'s point and warning flag
    (0: converged, 1: evaluation limit, 2: iteration limit). ``floats``, when given, is ``func``
    with ``args`` on a list of Python floats (the same value to the bit: :mod:`.inplace`)."""
    start = [float(v) for v in np.asarray(x0, dtype=np.float64).ravel()]
    n = len(start)
    maxfun = maxiter = n * 200
    calls = 0
    evaluate = floats if floats is not None else _on_array(func, args)

    def f(x: list[float]) -> float:
        nonlocal calls
        if calls >= maxfun:
            raise _Exhausted
        calls += 1
        return evaluate(x)

    sim = [start]
    for k in range(n):
        y = list(start)
        y[k] = (1 + NONZDELT) * y[k] if y[k] != 0 else ZDELT
        sim.append(y)
    fsim = [math.inf] * (n + 1)

    def ordered() -> None:
        order = _order(fsim)
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
        last_only = _OWN and n < 16  # only the last vertex changes, unless the simplex shrinks
        try:
            if _converged(sim, fsim):
                break
            xbar = _centroid(sim[:-1])
            worst = sim[-1]
            xr = [2 * b - w for b, w in zip(xbar, worst, strict=False)]  # 1 * w is w: same bits
            fxr = f(xr)
            shrink = False
            if fxr < fsim[0]:
                xe = [3 * b - 2 * w for b, w in zip(xbar, worst, strict=False)]
                fxe = f(xe)
                sim[-1], fsim[-1] = (xe, fxe) if fxe < fxr else (xr, fxr)
            elif fxr < fsim[-2]:
                sim[-1], fsim[-1] = xr, fxr
            elif fxr < fsim[-1]:
                xc = [1.5 * b - 0.5 * w for b, w in zip(xbar, worst, strict=False)]
                fxc = f(xc)
                if fxc <= fxr:
                    sim[-1], fsim[-1] = xc, fxc
                else:
                    shrink = True
            else:
                xcc = [0.5 * b + 0.5 * w for b, w in zip(xbar, worst, strict=False)]
                fxcc = f(xcc)
                if fxcc < fsim[-1]:
                    sim[-1], fsim[-1] = xcc, fxcc
                else:
                    shrink = True
            if shrink:
                last_only = False
                best = sim[0]
                for j in range(1, n + 1):
                    sim[j] = [b + 0.5 * (v - b) for b, v in zip(best, sim[j], strict=False)]
                    fsim[j] = f(sim[j])
            iterations += 1
        except _Exhausted:
            pass
        finally:
            if last_only:
                _settle_last(sim, fsim)
            else:
                ordered()
    flag = 1 if calls >= maxfun else 2 if iterations >= maxiter else 0
    return np.array(sim[0], dtype=np.float64), flag
