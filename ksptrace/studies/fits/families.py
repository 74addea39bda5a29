"""The candidate families in the engine's own terms: a vectorised cdf, parameter transforms,
bounds and a grid of starting shapes for each.

Every cdf is written here from its closed form with ``scipy.special`` functions (no private
scipy method, no version-specific path) and takes the standardised points ``u`` with the shapes
as arrays that broadcast against it, so a whole set of parameter vectors (a finite-difference
stencil, a grid of starts) is evaluated in one call. Parameters are scipy's (shapes..., loc,
scale); the optimiser works on ``theta`` where every positive parameter is its logarithm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special as sc

from ksptrace.errors import AnalysisError

Cdf = Callable[[np.ndarray, tuple[np.ndarray, ...]], np.ndarray]
"""``cdf(u, shapes)`` or ``sf(u, shapes)`` of the standardised family."""
Convert = Callable[[np.ndarray], np.ndarray]
"""Rows of (shapes..., loc, scale) in one parameterisation to rows in another."""

LOC_BOUND = 1e4
"""|loc| bound on the standardised scale (median 0, interquartile range 1)."""
SCALE_BOUNDS = (1e-6, 1e4)
"""Scale bounds on the standardised scale."""


@dataclass(frozen=True)
class Family:
    """One candidate family: its shapes, their bounds, where to start, and its cdf."""

    name: str
    shapes: tuple[str, ...]
    positive: tuple[bool, ...]
    """Per shape: True if the optimiser works on its logarithm."""
    bounds: tuple[tuple[float, float], ...]
    """Per shape, in its natural units."""
    grid: tuple[tuple[float, ...], ...]
    """Starting shapes; loc and scale are matched to the sample's quartiles for each."""
    cdf: Cdf
    sf: Cdf
    step: float = 1e-4
    """Finite-difference step in theta: larger for a cdf computed to fewer digits (nct's)."""
    edge_loc: bool = False
    """True if the support starts at loc: the optimiser then works on log(anchor - loc), where
    the anchor is the upper edge of the first non-empty cell (loc must stay below it, and the
    approach to it is on a log scale, so a finite-difference step never jumps past it)."""
    to_scipy: Convert | None = None
    """For a family whose own parameters (those of ``cdf``) are not scipy's: rows of its own
    (shapes..., loc, scale) to scipy's; ``from_scipy`` the inverse."""
    from_scipy: Convert | None = None
    edge_variant: Family | None = None
    """The same family in edge-located coordinates (``edge_loc``), tried when a fit in these
    is not verified and its first shape is below one (engine.fit_family)."""
    coshed: bool = False
    """True if theta's last entry is ``log(scale) + log(cosh(first shape))`` instead of
    ``log(scale)`` (Johnson S_U in its own terms: towards its lognormal limits the first shape
    goes to plus or minus infinity and the scale to zero together; in this coordinate the
    limit is along the first shape alone)."""

    @property
    def size(self) -> int:
        return len(self.shapes) + 2

    def theta_bounds(self) -> list[tuple[float, float]]:
        """Box bounds of ``theta`` (log of positive shapes; loc; log scale)."""
        out = [(float(np.log(lo)), float(np.log(hi))) if pos else (lo, hi)
               for (lo, hi), pos in zip(self.bounds, self.positive, strict=True)]
        lo, hi = SCALE_BOUNDS
        loc = (float(np.log(1e-12)), float(np.log(2 * LOC_BOUND))) if self.edge_loc else (
            -LOC_BOUND, LOC_BOUND)
        return [*out, loc, (float(np.log(lo)), float(np.log(hi)))]

    def natural(self, theta: np.ndarray, anchor: float) -> np.ndarray:
        """Rows of (shapes..., loc, scale) from rows of ``theta``."""
        t = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        out = t.copy()
        for i, pos in enumerate(self.positive):
            if pos:
                out[:, i] = np.exp(t[:, i])
        if self.edge_loc:
            out[:, -2] = anchor - np.exp(t[:, -2])
        out[:, -1] = np.exp(t[:, -1])
        if self.coshed:
            out[:, -1] = np.exp(t[:, -1] - _log_cosh(t[:, 0]))
        return out

    def scipy_params(self, theta: np.ndarray, anchor: float) -> np.ndarray:
        """Rows of scipy's (shapes..., loc, scale) from rows of ``theta``."""
        own = self.natural(theta, anchor)
        return own if self.to_scipy is None else self.to_scipy(own)

    def theta(self, params: np.ndarray, anchor: float) -> np.ndarray:
        """``theta`` of one vector of scipy's parameters (NaN loc if at or above the anchor of
        an edge-located family): the inverse of :meth:`scipy_params`."""
        p = np.asarray(params, dtype=np.float64).copy()
        if self.from_scipy is not None:
            p = self.from_scipy(p[None, :])[0]
        for i, pos in enumerate(self.positive):
            if pos:
                p[i] = np.log(p[i])
        if self.edge_loc:
            gap = anchor - p[-2]
            p[-2] = np.log(gap) if gap > 0 else np.nan
        p[-1] = np.log(p[-1])
        if self.coshed:
            p[-1] += _log_cosh(p[0])
        return p


def _log_cosh(x: np.ndarray) -> np.ndarray:
    """``log(cosh(x))`` without overflow."""
    ax = np.abs(x)
    return np.asarray(ax + np.log1p(np.exp(-2.0 * ax)) - np.log(2.0))


def _norm(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(u))


def _lognorm_z(u: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normal deviate ``log(1 + s u) / s`` of the lognormal in its own terms (median 0,
    scale w: loc = -w / s and scipy's scale w / s), and where it is defined."""
    inside = s * u > -1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log1p(np.where(inside, s * u, 0.0)) / s, inside


def _lognorm(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    z, inside = _lognorm_z(u, s[0])
    return np.where(inside, sc.ndtr(z), 0.0)


def _lognorm_scipy(own: np.ndarray) -> np.ndarray:
    s, m, w = own[:, 0], own[:, 1], own[:, 2]
    return np.column_stack((s, m - w / s, w / s))


def _lognorm_own(p: np.ndarray) -> np.ndarray:
    s, loc, scale = p[:, 0], p[:, 1], p[:, 2]
    return np.column_stack((s, loc + scale, s * scale))


def _johnsonsu_z(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """The normal deviate of Johnson S_U in its own terms (delta, eps, median m, scale w):
    x = m + (w / eps) (sinh(eps z - delta) + sinh(delta)), so scipy's a = delta / eps,
    b = 1 / eps, scale = w / eps, loc = m + scale sinh(delta). At eps -> 0 it tends to the
    normal (its limit b -> infinity), at |delta| -> infinity to a lognormal."""
    delta, eps = s
    return np.asarray((np.arcsinh(eps * u - np.sinh(delta)) + delta) / eps)


def _johnsonsu_own_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(_johnsonsu_z(u, s)))


def _johnsonsu_own_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(-_johnsonsu_z(u, s)))


def _johnsonsu_scipy(own: np.ndarray) -> np.ndarray:
    delta, eps, m, w = own[:, 0], own[:, 1], own[:, 2], own[:, 3]
    scale = w / eps
    return np.column_stack((delta / eps, 1.0 / eps, m + scale * np.sinh(delta), scale))


def _johnsonsu_own(p: np.ndarray) -> np.ndarray:
    a, b, loc, scale = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    return np.column_stack((a / b, 1.0 / b, loc - scale * np.sinh(a / b), scale / b))


def _johnsonsu(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(s[0] + s[1] * np.arcsinh(u)))


def _gamma_x(u: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shape a = 1 / k^2 and the gamma variate ``(1 + k u) / k^2`` of the gamma in its own
    terms (mean 0, standard deviation w, skewness 2 k: scipy's a = 1 / k^2, scale = w k, loc =
    -w / k)."""
    a = 1.0 / (k * k)
    return a, np.maximum((1.0 + k * u) * a, 0.0)


def _gamma(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.gammainc(*_gamma_x(u, s[0])))


def _gamma_scipy_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.gammainc(s[0], np.maximum(u, 0.0)))


def _gamma_scipy_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.gammaincc(s[0], np.maximum(u, 0.0)))


def _gamma_scipy(own: np.ndarray) -> np.ndarray:
    k, m, w = own[:, 0], own[:, 1], own[:, 2]
    return np.column_stack((1.0 / (k * k), m - w / k, w * k))


def _gamma_own(p: np.ndarray) -> np.ndarray:
    a, loc, scale = p[:, 0], p[:, 1], p[:, 2]
    return np.column_stack((1.0 / np.sqrt(a), loc + a * scale, np.sqrt(a) * scale))


def _genextreme(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """scipy's convention: F = exp(-(1 - c u)^(1/c)), exp(-exp(-u)) at c = 0."""
    c = np.broadcast_to(s[0], np.broadcast(u, s[0]).shape)
    small = np.abs(c) < 1e-10
    arg = 1.0 - c * u
    inside = arg > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.where(small, -u, np.log1p(-c * np.where(inside, u, 0.0)) / np.where(small, 1.0, c))
        f = np.exp(-np.exp(t))
    return np.where(inside | small, f, np.where(c > 0, 1.0, 0.0))


def _exponweib(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-np.power(np.maximum(u, 0.0), s[1]))
        return np.where(u > 0, np.exp(s[0] * np.log(base)), 0.0)


def _norm_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(-u))


def _lognorm_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    z, inside = _lognorm_z(u, s[0])
    return np.where(inside, sc.ndtr(-z), 1.0)


def _johnsonsu_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(-(s[0] + s[1] * np.arcsinh(u))))


def _gamma_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.gammaincc(*_gamma_x(u, s[0])))


def _genextreme_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    c = np.broadcast_to(s[0], np.broadcast(u, s[0]).shape)
    small = np.abs(c) < 1e-10
    inside = 1.0 - c * u > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.where(small, -u, np.log1p(-c * np.where(inside, u, 0.0)) / np.where(small, 1.0, c))
        f = -np.expm1(-np.exp(t))
    return np.where(inside | small, f, np.where(c > 0, 0.0, 1.0))


def _exponweib_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-np.power(np.maximum(u, 0.0), s[1]))
        return np.where(u > 0, -np.expm1(s[0] * np.log(base)), 1.0)


def _weibull_power(u: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """``(1 + kappa u)^(1 / kappa)``, scipy's ``((x - loc) / scale)^c`` of the exponentiated
    Weibull in its own terms (kappa = 1 / c, location at scipy's loc + scale, scale
    scipy's scale / c): at kappa -> 0 it tends to exp(u), the Gumbel limit; 0 below the
    support."""
    inside = kappa * u > -1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(inside, np.exp(np.log1p(np.where(inside, kappa * u, 0.0)) / kappa), 0.0)


def _exponweib_own_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-_weibull_power(u, s[1]))
        return np.where(base > 0, np.exp(s[0] * np.log(base)), 0.0)


def _exponweib_own_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-_weibull_power(u, s[1]))
        return np.where(base > 0, -np.expm1(s[0] * np.log(base)), 1.0)


def _exponweib_scipy(own: np.ndarray) -> np.ndarray:
    a, kappa, m, w = own[:, 0], own[:, 1], own[:, 2], own[:, 3]
    return np.column_stack((a, 1.0 / kappa, m - w / kappa, w / kappa))


def _exponweib_own(p: np.ndarray) -> np.ndarray:
    a, c, loc, scale = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    return np.column_stack((a, 1.0 / c, loc + scale, scale / c))


def _nct_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.nctdtr(s[0], -s[1], -u))


def _cauchy(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(0.5 + np.arctan(u) / np.pi)


def _cauchy_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(0.5 - np.arctan(u) / np.pi)


def _nct(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.nctdtr(s[0], s[1], u))


GAMMA_AT_EDGE = Family("gamma", ("a",), (True,), ((1e-2, 1e4),),
                       tuple((a,) for a in (0.3, 0.5, 0.8)), _gamma_scipy_cdf,
                       _gamma_scipy_sf, edge_loc=True)
"""Gamma in scipy's parameters with log(anchor - loc): where the density spikes at loc."""
EXPONWEIB_AT_EDGE = Family("exponweib", ("a", "c"), (True, True), ((1e-3, 1e3), (1e-2, 1e2)),
                           tuple((a, c) for a in (0.5, 1.0, 4.0) for c in (0.5, 1.0, 2.0)),
                           _exponweib, _exponweib_sf, edge_loc=True)
"""The exponentiated Weibull in scipy's parameters with log(anchor - loc)."""

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("norm", (), (), (), ((),), _norm, _norm_sf),
    Family("lognorm", ("s",), (False,), ((1e-3, 1e2),),
           tuple((s,) for s in (0.1, 0.3, 0.6, 1.0, 1.6)), _lognorm, _lognorm_sf,
           to_scipy=_lognorm_scipy, from_scipy=_lognorm_own),
    Family("johnsonsu", ("a", "b"), (False, False), ((-30.0, 30.0), (1e-2, 1e2)),
           tuple((a, b) for a in (-4.0, -2.0, -1.0, 0.0, 1.0) for b in (0.6, 1.2, 2.5)),
           _johnsonsu_own_cdf, _johnsonsu_own_sf, to_scipy=_johnsonsu_scipy,
           from_scipy=_johnsonsu_own, coshed=True),
    Family("gamma", ("a",), (False,), ((1e-2, 10.0),),
           tuple((a,) for a in (0.5, 1.0, 2.0, 5.0, 20.0, 100.0)), _gamma, _gamma_sf,
           to_scipy=_gamma_scipy, from_scipy=_gamma_own, edge_variant=GAMMA_AT_EDGE),
    Family("genextreme", ("c",), (False,), ((-5.0, 5.0),),
           tuple((c,) for c in (-0.6, -0.3, -0.1, 0.0, 0.2)), _genextreme, _genextreme_sf),
    Family("exponweib", ("a", "c"), (True, False), ((1e-3, 1e3), (1e-2, 1e2)),
           tuple((a, c) for a in (0.5, 1.0, 4.0, 20.0) for c in (0.5, 1.0, 2.0, 4.0)),
           _exponweib_own_cdf, _exponweib_own_sf, to_scipy=_exponweib_scipy,
           from_scipy=_exponweib_own, edge_variant=EXPONWEIB_AT_EDGE),
    Family("cauchy", (), (), (), ((),), _cauchy, _cauchy_sf),
    Family("nct", ("df", "nc"), (True, False), ((0.5, 1e3), (-1e2, 1e2)),
           tuple((df, nc) for df in (3.0, 10.0, 60.0) for nc in (0.0, 1.0, 3.0)), _nct, _nct_sf,
           step=5e-3),
)}


def family(name: str) -> Family:
    """The engine's family ``name``; an unknown name lists the valid ones."""
    found = FAMILIES.get(name)
    if found is None:
        raise AnalysisError(
            f"the fitting engine has no family {name!r}; use one of {', '.join(FAMILIES)}"
        )
    return found
