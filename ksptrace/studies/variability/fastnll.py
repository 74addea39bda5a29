"""scipy's penalised negative log-likelihood for five families, the same numbers in fewer steps.

``rv_continuous.fit`` minimises ``_penalized_nnlf(theta, x)`` with Nelder-Mead: 200 to 800
evaluations per fit, most of a trace's analysis. scipy's function checks and broadcasts its
arguments generically on every call (``_lazywhere``, ``argsreduce``, ``_get_support``), which
costs 1.5 to 3.5 times the arithmetic itself on a demo trace's 2,000 values. The functions here
perform the same floating-point operations on the same values in the same order, so they return
the same bits, and Nelder-Mead takes the same path to the same parameters.

They follow scipy 1.10 and are used only with it (CHECKED_SCIPY). :func:`objective` also checks
a replacement against scipy's own function at the optimiser's starting point and hands back
scipy's function if the two differ in any bit. ``tests/studies/variability/test_fastnll.py``
compares them at thousands of points, inside and outside each family's support, and compares
whole fits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy
from scipy import special as sc

Objective = Callable[[np.ndarray, np.ndarray], float]

_PENALTY_UNIT = np.log(np.finfo(float).max)
_XMIN = np.finfo(float).tiny
_SQRT_2PI = np.sqrt(2 * np.pi)


def _positive(*shapes: Any) -> bool:
    return all(s > 0 for s in shapes)  # scalars from the optimiser's array; NaN is not > 0


def _penalised(theta: np.ndarray, z: np.ndarray, argcheck: Callable[..., bool],
               inside: Callable[..., np.ndarray | bool], logpdf: Callable[..., np.ndarray]
               ) -> float:
    """-sum(logpdf) of the standardised values, plus scipy's penalty for each value outside the
    support or of zero density, plus n log(scale). ``inside`` answers True when every value is
    inside the support (two reductions instead of a mask)."""
    loc, scale, shapes = theta[-2], theta[-1], tuple(theta[:-2])
    if not argcheck(*shapes) or scale <= 0:
        return np.inf
    x = np.asarray((z - loc) / scale)
    n_log_scale = len(x) * np.log(scale)
    keep = inside(x, *shapes)
    n_bad = 0 if keep is True else np.count_nonzero(~keep, axis=0)
    if n_bad > 0:
        x = np.extract(keep, x)
    logff = logpdf(x, *shapes)
    if n_bad == 0:
        total = logff.sum(axis=0)  # np.sum's own reduction, without its wrapper
        if np.isfinite(total):  # then every term is finite: scipy's sum, unpenalised
            return -total + n_log_scale
    finite = np.isfinite(logff)
    n_bad += np.sum(~finite, axis=0)
    if n_bad > 0:
        return -np.sum(logff[finite], axis=0) + n_bad * _PENALTY_UNIT * 100 + n_log_scale
    return -np.sum(logff, axis=0) + n_log_scale


def _closed(low: float, high: float) -> Callable[..., np.ndarray | bool]:
    def inside(x: np.ndarray, *shapes: Any) -> np.ndarray | bool:
        if low <= x.min() and x.max() <= high:  # False for a NaN
            return True
        return (low <= x) & (x <= high)
    return inside


def _open(low: float, high: float) -> Callable[..., np.ndarray | bool]:
    def inside(x: np.ndarray, *shapes: Any) -> np.ndarray | bool:
        if low < x.min() and x.max() < high:
            return True
        return (low < x) & (x < high)
    return inside


def _johnsonsu_logpdf(x: np.ndarray, a: Any, b: Any) -> np.ndarray:
    root = np.sqrt(x * x + 1.0)  # scipy computes it twice, as sqrt(x2 + 1) and sqrt(x2 + 1.0)
    y = a + b * np.log(x + root)
    trm = np.exp(-y**2 / 2.0) / _SQRT_2PI
    return np.log(b * 1.0 / root * trm)


def _lognorm_logpdf(x: np.ndarray, s: Any) -> np.ndarray:
    nonzero = x != 0
    out = np.full(x.shape, -np.inf)
    xs = np.extract(nonzero, x)
    ss = np.full(xs.shape, s)  # scipy broadcasts s to an array: the same operations on arrays
    np.place(out, nonzero, -np.log(xs)**2 / (2 * ss**2) - np.log(ss * xs * _SQRT_2PI))
    return out


def _gamma_logpdf(x: np.ndarray, a: Any) -> np.ndarray:
    return sc.xlogy(a - 1.0, x) - x - sc.gammaln(a)


def _exponweib_logpdf(x: np.ndarray, a: Any, c: Any) -> np.ndarray:
    negxc = -x**c
    exm1c = -sc.expm1(negxc)
    return np.log(a) + np.log(c) + sc.xlogy(a - 1.0, exm1c) + negxc + sc.xlogy(c - 1.0, x)


def _genextreme_inside(x: np.ndarray, c: Any) -> np.ndarray | bool:
    high = np.where(c > 0, 1.0 / np.maximum(c, _XMIN), np.inf)
    low = np.where(c < 0, 1.0 / np.minimum(c, -_XMIN), -np.inf)
    return (low <= x) & (x <= high)


def _genextreme_logpdf(x: np.ndarray, c: Any) -> np.ndarray:
    # scipy's general case; objective() leaves c == 0, c == 1 and non-finite x to scipy.
    cs = np.full(x.shape, c)
    cx = cs * x
    logex2 = sc.log1p(-cx)
    logpex2 = sc.log1p(-cs * x) / cs
    pex2 = np.exp(logpex2)
    valid = ~((cx == 1) | (cx == -np.inf))
    out = np.full(x.shape, -np.inf)
    np.place(out, valid, -np.extract(valid, pex2) + np.extract(valid, logpex2)
             - np.extract(valid, logex2))
    return out


def _isfinite_shape(c: Any) -> bool:
    return bool(np.isfinite(c))


def _johnsonsu_check(a: Any, b: Any) -> bool:
    return bool((b > 0) & (a == a))


def _genextreme_general(theta: np.ndarray, z: np.ndarray) -> bool:
    c = theta[0]
    return bool(c != 0 and c != 1)


REPLACEMENTS: dict[str, tuple[Callable[..., bool],
                              Callable[[Any], Callable[..., np.ndarray | bool]],
                              Callable[..., np.ndarray]]] = {
    "johnsonsu": (_johnsonsu_check, lambda d: _closed(d.a, d.b), _johnsonsu_logpdf),
    "lognorm": (_positive, lambda d: _open(d.a, d.b), _lognorm_logpdf),
    "gamma": (_positive, lambda d: _closed(d.a, d.b), _gamma_logpdf),
    "exponweib": (_positive, lambda d: _closed(d.a, d.b), _exponweib_logpdf),
    "genextreme": (_isfinite_shape, lambda d: _genextreme_inside, _genextreme_logpdf),
}
"""family -> (shape check, support test for the family's scipy object, log-density)."""


def replacement(dist: Any) -> Objective | None:
    """The faster twin of ``dist._penalized_nnlf``, or None for a family without one."""
    entry = REPLACEMENTS.get(getattr(dist, "name", ""))
    if entry is None:
        return None
    argcheck, support, logpdf = entry
    inside = support(dist)
    general = _genextreme_general if dist.name == "genextreme" else None
    scipys: Objective = dist._penalized_nnlf

    def twin(theta: np.ndarray, z: np.ndarray) -> float:
        if general is not None and not general(theta, z):
            return scipys(theta, z)
        return _penalised(theta, z, argcheck, inside, logpdf)

    return twin


CHECKED_SCIPY = ("1.10.",)
"""scipy releases whose code the twins follow (and the tests compare): with another release,
scipy's own function is used."""


def objective(dist: Any, scipys: Objective, x0: np.ndarray, z: np.ndarray) -> Objective:
    """The twin of scipy's ``scipys`` when there is one for this scipy release and it gives the
    same bits at ``x0``, else ``scipys`` itself."""
    twin = replacement(dist) if scipy.__version__.startswith(CHECKED_SCIPY) else None
    if twin is None or not np.isfinite(z).all():
        return scipys
    start = np.asarray(x0, dtype=np.float64)
    with np.errstate(all="ignore"):
        same = _same(twin(start, z), scipys(start, z))
    return twin if same else scipys


def _same(a: float, b: float) -> bool:
    return bool(np.float64(a).tobytes() == np.float64(b).tobytes())
