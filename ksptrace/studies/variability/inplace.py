"""The penalised negative log-likelihood of five families on the optimiser's Python floats.

:mod:`.fastnll`'s twins take scipy's route: a parameter array, then a new array for every step
of the log-density. Here each family's function takes the parameters as Python floats, writes
every step into two or three buffers allocated once per fit, and decides the support test from
the sample's minimum and maximum alone (``(z - loc) / scale`` is monotone in ``z`` under IEEE
rounding, so the smallest standardised value is ``(min z - loc) / scale`` to the bit). Each
element still goes through the same ufunc with the same operands in the same order, so the
value is the twin's to the bit; genextreme's log1p of ``-c x``, which scipy computes twice, is
computed once. The 224 fits of the 32 demo traces: 3.06 -> 2.24 s.

Only the common cases are taken here: finite loc and scale > 0, valid shapes and a finite sum,
with every value inside the support, or with some outside: then, as scipy does, the sum runs
over the values inside (``np.extract`` of the support mask, in their order) and each value
outside adds the penalty. Anything else (NaN, infinities, a zero density, exponweib's c in
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

from ksptrace.studies.variability.fastnll import _PENALTY_UNIT, Objective, _same

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
_and = np.logical_and


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
        self.keep, self.also = np.empty(self.n, dtype=bool), np.empty(self.n, dtype=bool)
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

    def half_line(self, loc: float, scale: float, open_: bool
                  ) -> tuple[float, np.ndarray | None] | None:
        """For a family on [0, inf] ((0, inf) when ``open_``): None if loc or scale is not
        usable; else :meth:`standardised` and None when every value is inside the support, or
        the values inside, in their order, when some are not (scipy's penalised case)."""
        if not _usable(loc, scale):
            return None
        low, high = self.ends(loc, scale)
        nls = self.standardised(loc, scale)
        if (low > 0 and high < INF) if open_ else (low >= 0 and high <= INF):
            return nls, None
        if open_:
            return nls, self.inside(0.0, INF, strict=True)
        return nls, self.inside(0.0, INF)

    def inside(self, low: float, high: float, strict: bool = False) -> np.ndarray:
        """The values of ``x`` in [low, high] ((low, high) when ``strict``), in their order:
        ``np.extract`` of scipy's support mask."""
        above, below = (np.greater, np.less) if strict else (np.greater_equal, np.less_equal)
        above(self.x, low, out=self.keep)
        below(self.x, high, out=self.also)
        _and(self.keep, self.also, out=self.keep)
        return self.x[self.keep]

    def finish(self, total: float, n_log_scale: float, p: list[float],
               inside: np.ndarray | None = None) -> float:
        """scipy's value from the sum of the log-densities: the plain sum when every value is
        inside the support, else the sum over the values inside plus the penalty of the
        others; the twin decides when the sum is not finite."""
        if total - total != 0:
            return self.fallback(p)
        if inside is None:
            return float(-total + n_log_scale)
        return float(-total + (self.n - inside.size) * _PENALTY_UNIT * 100 + n_log_scale)


def _heads(size: int, *buffers: np.ndarray) -> tuple[np.ndarray, ...]:
    """The first ``size`` elements of each buffer (for the values inside the support)."""
    return tuple(b[:size] for b in buffers)


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
        got = fr.half_line(loc, scale, False) if a > 0 and c > 0 and c not in _FAST_POWERS \
            else None
        if got is None:
            return fr.fallback(p)
        nls, inside = got
        xs, ts, us = (x, t, u) if inside is None else (inside, *_heads(inside.size, t, u))
        c_[()], am1[()], cm1[()], k_[()] = c, a - 1.0, c - 1.0, _log(a) + _log(c)
        np.power(xs, c_, out=ts)
        _neg(ts, out=ts)  # negxc
        sc.expm1(ts, out=us)
        _neg(us, out=us)  # exm1c
        sc.xlogy(am1, us, out=us)
        _add(k_, us, out=us)
        _add(us, ts, out=us)
        sc.xlogy(cm1, xs, out=ts)
        _add(us, ts, out=us)
        return fr.finish(_sum(us), nls, p, inside)

    return f


def _gamma(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, am1, lga = fr.x, np.empty(fr.n), _operand(), _operand()

    def f(p: list[float]) -> float:
        a, loc, scale = p
        got = fr.half_line(loc, scale, False) if a > 0 else None
        if got is None:
            return fr.fallback(p)
        nls, inside = got
        xs, ts = (x, t) if inside is None else (inside, t[:inside.size])
        am1[()], lga[()] = a - 1.0, sc.gammaln(a)
        sc.xlogy(am1, xs, out=ts)
        _sub(ts, xs, out=ts)
        _sub(ts, lga, out=ts)
        return fr.finish(_sum(ts), nls, p, inside)

    return f


def _lognorm(z: np.ndarray, twin: Objective) -> OnFloats:
    fr = _Frame(z, twin)
    x, t, s_, twice_s2 = fr.x, np.empty(fr.n), _operand(), _operand()

    def f(p: list[float]) -> float:
        s, loc, scale = p
        got = fr.half_line(loc, scale, True) if s > 0 else None  # no zero to leave out
        if got is None:
            return fr.fallback(p)
        nls, inside = got
        xs, ts = (x, t) if inside is None else (inside, t[:inside.size])
        s_[()], twice_s2[()] = s, 2 * (s * s)
        _log(xs, out=ts)
        _square(ts, out=ts)
        _neg(ts, out=ts)
        _div(ts, twice_s2, out=ts)
        _mul(s_, xs, out=xs)
        _mul(xs, _SQRT_2PI, out=xs)
        _log(xs, out=xs)
        _sub(ts, xs, out=ts)
        return fr.finish(_sum(ts), nls, p, inside)

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
        nls = fr.standardised(loc, scale)
        inside = None if low <= first and last <= high else fr.inside(low, high)
        xs, ts, vs = (x, t, v) if inside is None else (inside, *_heads(inside.size, t, v))
        c_[()] = c
        _mul(c_, xs, out=ts)
        _neg(ts, out=ts)
        sc.log1p(ts, out=ts)  # logex2 (where 1 - c x is 0 or inf, the sum is not finite)
        _div(ts, c_, out=xs)  # logpex2
        _exp(xs, out=vs)
        _neg(vs, out=vs)
        _add(vs, xs, out=vs)
        _sub(vs, ts, out=vs)
        return fr.finish(_sum(vs), nls, p, inside)

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
