"""The penalised negative log-likelihood of five families on the optimiser's Python floats.

:mod:`.fastnll`'s twins take scipy's route: a parameter array, then a new array for every step
of the log-density. Here each family's function takes the parameters as Python floats, writes
every step into two or three buffers allocated once per fit, and decides the support test from
the sample's minimum and maximum alone (``(z - loc) / scale`` is monotone in ``z`` under IEEE
rounding, so the smallest standardised value is ``(min z - loc) / scale`` to the bit). Each
element still goes through the same ufunc with the same operands in the same order, so the
value is the twin's to the bit; genextreme's log1p of ``-c x``, which scipy computes twice, is
computed once. The 224 fits of the 32 demo traces: 3.06 -> 2.24 s.

Only the common case is taken here: finite loc and scale > 0, valid shapes, every value inside
the support and a finite sum. Anything else (a penalty, NaN, infinities, exponweib's c in
numpy's fast powers 0.5, 1 and 2, genextreme's c of 0 or 1) is handed to the twin.
:func:`kernel` checks the function against the twin at the optimiser's start and returns None
if they differ in any bit; ``tests/studies/variability/test_inplace.py`` compares them at
thousands of points and compares whole fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special as sc

from ksptrace.studies.variability.fastnll import Objective, _same

OnFloats = Callable[[list[float]], float]

INF = math.inf
_XMIN = float(np.finfo(float).tiny)
_SQRT_2PI = np.array(np.sqrt(2 * np.pi))
_ONE, _MINUS_HALF = np.array(1.0), np.array(-0.5)
_FAST_POWERS = (0.5, 1.0, 2.0)
"""Exponents numpy's ``x ** c`` computes by another ufunc (sqrt, a copy, square), not power."""

_sub, _div, _mul, _add, _neg = np.subtract, np.divide, np.multiply, np.add, np.negative
_log, _exp, _sqrt, _square = np.log, np.exp, np.sqrt, np.square
_sum = np.add.reduce


def _operand() -> np.ndarray:
    """A 0-d float64 array for a Python float operand, set with ``a[()] = v`` before each use:
    the ufunc does the same float64 arithmetic as with the float, without converting it on
    every call (0.15 µs a call, 17 calls an evaluation, 108,000 evaluations a demo)."""
    return np.empty(())


class _Frame:
    """What every family shares: the sample, its extremes, the standardised buffer ``x`` and
    the fallback to the twin."""

    def __init__(self, z: np.ndarray, twin: Objective) -> None:
        self.z, self.twin, self.n = z, twin, z.size
        self.zmin, self.zmax = float(z.min()), float(z.max())
        self.x = np.empty(self.n)
        self.loc, self.scale = _operand(), _operand()

    def fallback(self, p: list[float]) -> float:
        return float(self.twin(np.array(p, dtype=np.float64), self.z))

    def standardised(self, loc: float, scale: float) -> float:
        """Fill ``x`` with ``(z - loc) / scale``; scipy's ``n log(scale)``."""
        self.loc[()], self.scale[()] = loc, scale
        _sub(self.z, self.loc, out=self.x)
        _div(self.x, self.scale, out=self.x)
        return float(self.n * _log(scale))

    def ends(self, loc: float, scale: float) -> tuple[float, float]:
        """The smallest and largest standardised values, to the bit."""
        return (self.zmin - loc) / scale, (self.zmax - loc) / scale

    def on_half_line(self, loc: float, scale: float, open_: bool) -> float | None:
        """For a family on [0, inf] ((0, inf) when ``open_``) with usable loc and scale:
        :meth:`standardised`, or None when a value falls outside the support."""
        if not _usable(loc, scale):
            return None
        low, high = self.ends(loc, scale)
        inside = (low > 0 and high < INF) if open_ else (low >= 0 and high <= INF)
        return self.standardised(loc, scale) if inside else None

    def finish(self, total: float, n_log_scale: float, p: list[float]) -> float:
        if total - total == 0:  # finite: scipy's unpenalised sum
            return float(-total + n_log_scale)
        return self.fallback(p)


def _usable(loc: float, scale: float) -> bool:
    return -INF < loc < INF and 0 < scale < INF


def _johnsonsu(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, a_, b_ = fr.x, np.empty(fr.n), _operand(), _operand()

    def f(p: list[float]) -> float:
        a, b, loc, scale = p
        if not (b > 0 and a == a and _usable(loc, scale)):
            return fr.fallback(p)
        nls = fr.standardised(loc, scale)  # the support is the whole line: nothing to test
        a_[()], b_[()] = a, b  # b * 1.0 is b
        _mul(x, x, out=t)
        _add(t, _ONE, out=t)
        _sqrt(t, out=t)  # root
        _add(x, t, out=x)
        _log(x, out=x)
        _mul(b_, x, out=x)
        _add(a_, x, out=x)  # y
        _square(x, out=x)
        _mul(x, _MINUS_HALF, out=x)  # -y**2 / 2.0: halving and negating are exact: same bits
        _exp(x, out=x)
        _div(x, _SQRT_2PI, out=x)  # trm
        _div(b_, t, out=t)
        _mul(t, x, out=t)
        _log(t, out=t)
        return fr.finish(_sum(t), nls, p)

    return f


def _exponweib(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, u = fr.x, np.empty(fr.n), np.empty(fr.n)
    c_, am1, cm1, k_ = _operand(), _operand(), _operand(), _operand()

    def f(p: list[float]) -> float:
        a, c, loc, scale = p
        nls = fr.on_half_line(loc, scale, False) if a > 0 and c > 0 and c not in _FAST_POWERS \
            else None
        if nls is None:
            return fr.fallback(p)
        c_[()], am1[()], cm1[()], k_[()] = c, a - 1.0, c - 1.0, _log(a) + _log(c)
        np.power(x, c_, out=t)
        _neg(t, out=t)  # negxc
        sc.expm1(t, out=u)
        _neg(u, out=u)  # exm1c
        sc.xlogy(am1, u, out=u)
        _add(k_, u, out=u)
        _add(u, t, out=u)
        sc.xlogy(cm1, x, out=t)
        _add(u, t, out=u)
        return fr.finish(_sum(u), nls, p)

    return f


def _gamma(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, am1, lga = fr.x, np.empty(fr.n), _operand(), _operand()

    def f(p: list[float]) -> float:
        a, loc, scale = p
        nls = fr.on_half_line(loc, scale, False) if a > 0 else None
        if nls is None:
            return fr.fallback(p)
        am1[()], lga[()] = a - 1.0, sc.gammaln(a)
        sc.xlogy(am1, x, out=t)
        _sub(t, x, out=t)
        _sub(t, lga, out=t)
        return fr.finish(_sum(t), nls, p)

    return f


def _lognorm(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, s_, twice_s2 = fr.x, np.empty(fr.n), _operand(), _operand()

    def f(p: list[float]) -> float:
        s, loc, scale = p
        nls = fr.on_half_line(loc, scale, True) if s > 0 else None  # no zero to leave out
        if nls is None:
            return fr.fallback(p)
        s_[()], twice_s2[()] = s, 2 * (s * s)
        _log(x, out=t)
        _square(t, out=t)
        _neg(t, out=t)
        _div(t, twice_s2, out=t)
        _mul(s_, x, out=x)
        _mul(x, _SQRT_2PI, out=x)
        _log(x, out=x)
        _sub(t, x, out=t)
        return fr.finish(_sum(t), nls, p)

    return f


def _genextreme(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, v, c_ = fr.x, np.empty(fr.n), np.empty(fr.n), _operand()

    def f(p: list[float]) -> float:
        c, loc, scale = p
        if not (-INF < c < INF and c != 0 and c != 1 and _usable(loc, scale)):
            return fr.fallback(p)
        high = 1.0 / max(c, _XMIN) if c > 0 else INF
        low = 1.0 / min(c, -_XMIN) if c < 0 else -INF
        first, last = fr.ends(loc, scale)
        if not (low <= first and last <= high):
            return fr.fallback(p)
        nls = fr.standardised(loc, scale)
        c_[()] = c
        _mul(c_, x, out=t)
        _neg(t, out=t)
        sc.log1p(t, out=t)  # logex2 (where 1 - c x is 0 or inf, the sum is not finite)
        _div(t, c_, out=x)  # logpex2
        _exp(x, out=v)
        _neg(v, out=v)
        _add(v, x, out=v)
        _sub(v, t, out=v)
        return fr.finish(_sum(v), nls, p)

    return f


KERNELS: dict[str, Callable[[np.ndarray, Objective], OnFloats]] = {
    "johnsonsu": _johnsonsu, "exponweib": _exponweib, "gamma": _gamma, "lognorm": _lognorm,
    "genextreme": _genextreme}


def kernel(name: str, twin: Objective, x0: np.ndarray, z: np.ndarray) -> OnFloats | None:
    """The function on floats for family ``name`` over ``z``, if it gives the twin's bits at
    ``x0``; else None."""
    make = KERNELS.get(name)
    if make is None:
        return None
    f = make(np.ascontiguousarray(z, dtype=np.float64), twin)
    start = np.asarray(x0, dtype=np.float64)
    with np.errstate(all="ignore"):
        same = _same(f([float(v) for v in start]), twin(start, z))
    return f if same else None
