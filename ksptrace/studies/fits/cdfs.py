"""Closed-form cdfs and survival functions of the engine's families, and the conversions
between a family's own parameters and scipy's.

Each takes the standardised points ``u`` and the shapes as arrays that broadcast against it, so
a whole set of parameter vectors (a finite-difference stencil, a grid of starts, a Newton
step's trials) is one call. Only ``scipy.special`` functions and numpy: no private scipy method,
nothing that depends on a scipy or numpy release. The own parameterisations (lognorm, gamma,
exponweib, johnsonsu) put each family's limits at a point of one coordinate
(:mod:`.families` says which).
"""

from __future__ import annotations

import numpy as np
from scipy import special as sc


def log_cosh(x: np.ndarray) -> np.ndarray:
    """``log(cosh(x))`` without overflow."""
    ax = np.abs(x)
    return np.asarray(ax + np.log1p(np.exp(-2.0 * ax)) - np.log(2.0))


def norm(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(u))


def lognorm_z(u: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normal deviate ``log(1 + s u) / s`` of the lognormal in its own terms (median 0,
    scale w: loc = -w / s and scipy's scale w / s), and where it is defined."""
    su = s * u
    inside = su > -1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log1p(np.where(inside, su, 0.0)) / s, inside


def lognorm(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    z, inside = lognorm_z(u, s[0])
    return np.where(inside, sc.ndtr(z), 0.0)


def lognorm_scipy(own: np.ndarray) -> np.ndarray:
    s, m, w = own[:, 0], own[:, 1], own[:, 2]
    return np.column_stack((s, m - w / s, w / s))


def lognorm_own(p: np.ndarray) -> np.ndarray:
    s, loc, scale = p[:, 0], p[:, 1], p[:, 2]
    return np.column_stack((s, loc + scale, s * scale))


def lognorm_scipy_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """scipy's lognormal: Phi(log(u) / s) for u > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(u > 0, sc.ndtr(np.log(np.where(u > 0, u, 1.0)) / s[0]), 0.0))


def lognorm_scipy_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(u > 0, sc.ndtr(-np.log(np.where(u > 0, u, 1.0)) / s[0]),
                                   1.0))


def johnsonsu_z(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """The normal deviate of Johnson S_U in its own terms (delta, eps, median m, scale w):
    x = m + (w / eps) (sinh(eps z - delta) + sinh(delta)), so scipy's a = delta / eps,
    b = 1 / eps, scale = w / eps, loc = m + scale sinh(delta). At eps -> 0 it tends to the
    normal (its limit b -> infinity), at |delta| -> infinity to a lognormal."""
    delta, eps = s
    return np.asarray((np.arcsinh(eps * u - np.sinh(delta)) + delta) / eps)


def johnsonsu_own_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(johnsonsu_z(u, s)))


def johnsonsu_own_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(-johnsonsu_z(u, s)))


def johnsonsu_scipy(own: np.ndarray) -> np.ndarray:
    delta, eps, m, w = own[:, 0], own[:, 1], own[:, 2], own[:, 3]
    scale = w / eps
    return np.column_stack((delta / eps, 1.0 / eps, m + scale * np.sinh(delta), scale))


def johnsonsu_own(p: np.ndarray) -> np.ndarray:
    a, b, loc, scale = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    return np.column_stack((a / b, 1.0 / b, loc - scale * np.sinh(a / b), scale / b))


def johnsonsu_edge_z(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """The normal deviate of Johnson S_U in its edge terms (delta, eps, L, S), with q = e^(2 delta):
    x = L + S (e^(eps z) + q (1 - e^(-eps z))), i.e. scipy's a = delta / eps, b = 1 / eps,
    loc = L + S q, scale = 2 S e^delta. At delta -> -infinity (q -> 0) it is the lognormal
    (s = eps, loc = L, scale = S): the lognormal limit is a point of one coordinate while L, the
    limit's lower end, is free to approach the lowest values (on a log scale in the engine's
    edge coordinates). ``y = e^(eps z)`` solves y^2 + (q - u) y - q = 0 for u = (x - L) / S,
    each root in the form that does not cancel."""
    delta, eps = s
    q = np.exp(2.0 * delta)
    v = u - q
    root = np.sqrt(v * v + 4.0 * q)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(v >= 0, 0.5 * (v + root), 2.0 * q / (root - v))
        return np.asarray(np.log(y) / eps)


def johnsonsu_edge_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(johnsonsu_edge_z(u, s)))


def johnsonsu_edge_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(-johnsonsu_edge_z(u, s)))


def johnsonsu_edge_scipy(own: np.ndarray) -> np.ndarray:
    delta, eps, low, size = own[:, 0], own[:, 1], own[:, 2], own[:, 3]
    return np.column_stack((delta / eps, 1.0 / eps, low + size * np.exp(2.0 * delta),
                            2.0 * size * np.exp(delta)))


def johnsonsu_edge_own(p: np.ndarray) -> np.ndarray:
    a, b, loc, scale = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    delta = a / b
    return np.column_stack((delta, 1.0 / b, loc - 0.5 * scale * np.exp(delta),
                            0.5 * scale * np.exp(-delta)))


def gamma_x(u: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shape a = 1 / k^2 and the gamma variate ``(1 + k u) / k^2`` of the gamma in its own
    terms (mean 0, standard deviation w, skewness 2 k: scipy's a = 1 / k^2, scale = w k, loc =
    -w / k)."""
    a = 1.0 / (k * k)
    return a, np.maximum((1.0 + k * u) * a, 0.0)


def gamma(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.gammainc(*gamma_x(u, s[0])))


def gamma_scipy_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.gammainc(s[0], np.maximum(u, 0.0)))


def gamma_scipy_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return upper_gamma(s[0], np.maximum(u, 0.0))


def gamma_scipy(own: np.ndarray) -> np.ndarray:
    k, m, w = own[:, 0], own[:, 1], own[:, 2]
    return np.column_stack((1.0 / (k * k), m - w / k, w * k))


def gamma_own(p: np.ndarray) -> np.ndarray:
    a, loc, scale = p[:, 0], p[:, 1], p[:, 2]
    return np.column_stack((1.0 / np.sqrt(a), loc + a * scale, np.sqrt(a) * scale))


def genextreme(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """scipy's convention: F = exp(-(1 - c u)^(1/c)), exp(-exp(-u)) at c = 0."""
    c = np.broadcast_to(s[0], np.broadcast(u, s[0]).shape)
    small = np.abs(c) < 1e-10
    arg = 1.0 - c * u
    inside = arg > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.where(small, -u, np.log1p(-c * np.where(inside, u, 0.0)) / np.where(small, 1.0, c))
        f = np.exp(-np.exp(t))
    return np.where(inside | small, f, np.where(c > 0, 1.0, 0.0))


def exponweib(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-np.power(np.maximum(u, 0.0), s[1]))
        return np.where(u > 0, np.exp(s[0] * np.log(base)), 0.0)


def norm_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.ndtr(-u))


def lognorm_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    z, inside = lognorm_z(u, s[0])
    return np.where(inside, sc.ndtr(-z), 1.0)


def upper_gamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``gammaincc(a, x)``, the regularised upper incomplete gamma Q(a, x). For a < 1 and x
    below about 2, scipy's gammaincc (1.10 to 1.17 alike) takes 1-3 us a value against 20-140
    ns elsewhere, and gamma fits of iteration times (a spike at the support's lower end, a < 1)
    live there. There Q(a, x) = Q(a + 1, x) - x^a e^-x / Gamma(a + 1), one step of the
    recurrence, with Q(a + 1, x) on the fast path; the subtraction loses less than a digit for
    x < 2 (Q(a, x) is then at least a fifth of Q(a + 1, x))."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    near = (a < 1.0) & (a > 0.0) & (x >= 0.0) & (x < 2.0)
    if not near.any():
        return np.asarray(sc.gammaincc(a, x))
    out = np.empty(a.shape)
    far = ~near
    out[far] = sc.gammaincc(a[far], x[far])
    an, xn = a[near], x[near]
    with np.errstate(divide="ignore"):
        term = np.exp(an * np.log(xn) - xn - sc.gammaln(an + 1.0))
    out[near] = np.maximum(sc.gammaincc(an + 1.0, xn) - term, 0.0)
    return out


def gamma_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return upper_gamma(*gamma_x(u, s[0]))


def genextreme_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    c = np.broadcast_to(s[0], np.broadcast(u, s[0]).shape)
    small = np.abs(c) < 1e-10
    inside = 1.0 - c * u > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.where(small, -u, np.log1p(-c * np.where(inside, u, 0.0)) / np.where(small, 1.0, c))
        f = -np.expm1(-np.exp(t))
    return np.where(inside | small, f, np.where(c > 0, 0.0, 1.0))


def exponweib_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-np.power(np.maximum(u, 0.0), s[1]))
        return np.where(u > 0, -np.expm1(s[0] * np.log(base)), 1.0)


def weibull_power(u: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """``(1 + kappa u)^(1 / kappa)``, scipy's ``((x - loc) / scale)^c`` of the exponentiated
    Weibull in its own terms (kappa = 1 / c, location at scipy's loc + scale, scale
    scipy's scale / c): at kappa -> 0 it tends to exp(u), the Gumbel limit; 0 below the
    support."""
    ku = kappa * u
    inside = ku > -1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(inside, np.exp(np.log1p(np.where(inside, ku, 0.0)) / kappa), 0.0)


def exponweib_own_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-weibull_power(u, s[1]))
        return np.where(base > 0, np.exp(s[0] * np.log(base)), 0.0)


def exponweib_own_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        base = -np.expm1(-weibull_power(u, s[1]))
        return np.where(base > 0, -np.expm1(s[0] * np.log(base)), 1.0)


def exponweib_scipy(own: np.ndarray) -> np.ndarray:
    a, kappa, m, w = own[:, 0], own[:, 1], own[:, 2], own[:, 3]
    return np.column_stack((a, 1.0 / kappa, m - w / kappa, w / kappa))


def exponweib_own(p: np.ndarray) -> np.ndarray:
    a, c, loc, scale = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    return np.column_stack((a, 1.0 / c, loc + scale, scale / c))


def nct_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.nctdtr(s[0], -s[1], -u))


def cauchy(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(0.5 + np.arctan(u) / np.pi)


def cauchy_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(0.5 - np.arctan(u) / np.pi)


def nct(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.nctdtr(s[0], s[1], u))


def nct_own_cdf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    """nct in its own terms (df, phi = atan(nc), loc, w = scale sqrt(1 + nc^2)): as |nc| grows
    with w fixed the family tends to a scaled inverse-chi distribution, reached at the point
    |phi| = pi/2 of one coordinate instead of along a curved ridge in (nc, scale)."""
    return np.asarray(sc.nctdtr(s[0], np.tan(s[1]), u / np.cos(s[1])))


def nct_own_sf(u: np.ndarray, s: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.asarray(sc.nctdtr(s[0], -np.tan(s[1]), -u / np.cos(s[1])))


def nct_scipy(own: np.ndarray) -> np.ndarray:
    df, phi, loc, w = own[:, 0], own[:, 1], own[:, 2], own[:, 3]
    return np.column_stack((df, np.tan(phi), loc, w * np.cos(phi)))


def nct_own(p: np.ndarray) -> np.ndarray:
    df, nc, loc, scale = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    return np.column_stack((df, np.arctan(nc), loc, scale * np.hypot(1.0, nc)))
