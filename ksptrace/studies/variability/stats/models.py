"""Stochastic runtime models of standard and pipelined Krylov methods, and the classical bounds.

Standard methods synchronise every iteration, so an iteration lasts as long as its slowest
rank: T = sum_k max_p T_p^k. Pipelined methods only wait for the slowest rank overall:
T' = max_p sum_k T_p^k, which for many iterations tends to sum_k mu_k.

The expected maximum of N independent draws, N * integral x F^(N-1) f dx, is evaluated in the
quantile domain: with u = F(x) and u = exp(-w / N) it becomes
integral_0^inf Q(1 - exp(-w / N)) exp(-w) dw, whose integrand stays bounded in magnitude for
any N (no F^(N-1) underflow), so it is accurate for N up to 1e5 and beyond. Each tail is
evaluated through the function that keeps its precision there (``ppf`` below the median, ``isf``
above).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats.quadrature import expected_max_rule


def _check_count(count: float) -> float:
    c = float(count)
    if not c >= 1.0 or not np.isfinite(c):
        raise AnalysisError(f"the number of independent ranks must be >= 1, got {count}")
    return c


def johnsonsu_mean(a: float, b: float, loc: float, scale: float) -> float:
    """The mean of scipy's Johnson S_U(a, b, loc, scale) in closed form.

    X = loc + scale * sinh((Z - a) / b) with Z standard normal, and E[sinh(cZ + d)] =
    exp(c^2 / 2) sinh(d), so E[X] = loc - scale * exp(1 / (2 b^2)) * sinh(a / b). scipy 1.10
    has no formula and integrates the quantile function instead (a tenth of a second per
    call); the two agree to 1e-9 (tests/studies/variability/test_models.py).
    """
    return float(loc - scale * np.exp(0.5 / (b * b)) * np.sinh(a / b))


INTEGRATED_MEANS = frozenset({"exponweib"})
"""Families whose mean scipy 1.10 integrates numerically (30 ms a call): their mean is the
expected maximum of one draw, by quadrature.expected_max_rule (1 ms), when its checks pass."""


def mean_of(dist: Any) -> float:
    """The mean of a scipy frozen distribution: nan or inf when it has none (warnings silenced).

    Cauchy, t and nct with df <= 1, Pareto with b <= 1 and others have no finite mean.
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        name = getattr(getattr(dist, "dist", None), "name", None)
        if name == "johnsonsu":
            (a, b), loc, scale = dist.dist._parse_args(*dist.args, **dist.kwds)
            return johnsonsu_mean(a, b, loc, scale)
        if name in INTEGRATED_MEANS:
            by_rule = expected_max_rule(dist, 1.0)
            if by_rule is not None:
                return by_rule
        return float(dist.mean())


def has_finite_mean(dist: Any) -> bool:
    """Whether the scipy frozen distribution ``dist`` has a finite mean."""
    return bool(np.isfinite(mean_of(dist)))


def _refuse_infinite_mean(dist: Any, n: float, mean: float) -> None:
    if not np.isfinite(mean):
        raise AnalysisError(
            f"{_family(dist)} has no finite mean, so the expected maximum of {n:g} draws is "
            "infinite; use a fitted family with a finite mean"
        )


def _family(dist: Any) -> str:
    name = getattr(getattr(dist, "dist", None), "name", None)
    args = getattr(dist, "args", ())
    return f"{name}{tuple(float(a) for a in args)}" if name else "this distribution"


def expected_max(dist: Any, count: float) -> float:
    """E[max of ``count`` independent draws] from a scipy frozen distribution ``dist``.

    A distribution with no finite mean has no finite expected maximum either: refused (the
    quadrature would return a finite, meaningless number).
    """
    n = _check_count(count)
    _refuse_infinite_mean(dist, n, mean_of(dist))
    return _expected_max(dist, n)


def _quantiles(dist: Any) -> tuple[Callable[[float], float], Callable[[float], float]]:
    """``dist.ppf`` and ``dist.isf`` for one probability at a time, for the quadrature.

    A frozen scipy distribution's public ppf checks and broadcasts its arguments on every call
    (most of the time of E[max]); with valid shapes, loc and scale, and 0 < q < 1, it computes
    exactly ``_ppf(q, *shapes) * scale + loc``, which is what this calls. Anything else (a
    non-finite result, an argument scipy would refuse) goes through the public method."""
    family = getattr(dist, "dist", None)
    try:
        shapes, loc, scale = family._parse_args(*dist.args, **dist.kwds)  # type: ignore[union-attr]
        valid = bool(np.all(family._argcheck(*shapes))) and scale > 0  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        valid = False
    if not valid:
        return (lambda q: float(dist.ppf(q))), (lambda q: float(dist.isf(q)))
    direct_ppf, direct_isf = family._ppf, family._isf  # type: ignore[union-attr]

    def ppf(q: float) -> float:
        x = float(direct_ppf(np.float64(q), *shapes) * scale + loc) if 0.0 < q < 1.0 else np.nan
        return x if np.isfinite(x) else float(dist.ppf(q))

    def isf(q: float) -> float:
        x = float(direct_isf(np.float64(q), *shapes) * scale + loc) if 0.0 < q < 1.0 else np.nan
        return x if np.isfinite(x) else float(dist.isf(q))

    return ppf, isf


def _expected_max(dist: Any, n: float) -> float:
    """expected_max for a distribution known to have a finite mean: the mean itself for one
    draw (N = 1: a single-node or single-rank trace), else the vectorised rule of
    quadrature.py, or adaptive quadrature where that rule's checks fail. For one draw the
    rule's grid reaches the quantile of 1 - 1e-15, where a skewed fit's tail often fails its
    end check, and the adaptive quadrature then took 10-25 ms to find the mean that
    :func:`mean_of` has in closed form (the two agree to 1e-13, tested)."""
    if n == 1.0:
        mean = mean_of(dist)
        if np.isfinite(mean):
            return mean
    by_rule = expected_max_rule(dist, n)
    if by_rule is not None:
        return by_rule
    return expected_max_adaptive(dist, n)


def expected_max_adaptive(dist: Any, n: float) -> float:
    """E[max of n] by adaptive quadrature (scipy's quad), one quantile at a time."""
    ppf, isf = _quantiles(dist)

    def integrand(w: float) -> float:
        weight = np.exp(-w)
        if weight == 0.0:
            return 0.0
        u = np.exp(-w / n)
        # Each tail through the function that keeps its precision there.
        x = ppf(u) if u < 0.5 else isf(-np.expm1(-w / n))
        return float(x) * weight

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        head, _ = integrate.quad(integrand, 0.0, 1.0, limit=200, epsabs=0.0, epsrel=1e-12)
        tail, _ = integrate.quad(integrand, 1.0, np.inf, limit=200, epsabs=0.0, epsrel=1e-12)
    value = head + tail
    if not np.isfinite(value):
        raise AnalysisError(
            "the expected maximum diverges for this distribution (infinite mean?); "
            "choose another fitted family"
        )
    return float(value)


def expected_max_direct(dist: Any, count: float, lower: float, upper: float) -> float:
    """The textbook form N * integral_lower^upper x F(x)^(N-1) f(x) dx, by adaptive quadrature.

    Kept as the reference the paper used; it loses accuracy when F^(N-1) underflows (large N)
    and when [lower, upper] misses mass.
    """
    n = _check_count(count)

    def integrand(x: float) -> float:
        return float(x * n * dist.cdf(x) ** (n - 1.0) * dist.pdf(x))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        value, _ = integrate.quad(integrand, lower, upper, limit=200)
    return float(value)


def expected_max_uniform(
    lower: np.ndarray | float, span: np.ndarray | float, count: float
) -> np.ndarray:
    """E[max of N uniforms on [a, a + s]] = a + s N / (N + 1), elementwise."""
    n = _check_count(count)
    return np.asarray(lower, dtype=np.float64) + np.asarray(span, dtype=np.float64) * (
        n / (n + 1.0)
    )


def cramer_bound(mean: float, std: float, count: float) -> float:
    """Upper bound on E[max of N i.i.d.]: mu + sigma (N - 1) / sqrt(2N - 1)."""
    n = _check_count(count)
    return float(mean + std * (n - 1.0) / np.sqrt(2.0 * n - 1.0))


def bertsimas_bound(mean: float, std: float, count: float) -> float:
    """Bound on E[max of N identically distributed, maybe dependent]: mu + sigma sqrt(N - 1)."""
    n = _check_count(count)
    return float(mean + std * np.sqrt(n - 1.0))


@dataclass(frozen=True)
class StationaryModel:
    """E[T] = K E[max of N] and E[T'] = K mu for one fitted distribution."""

    family: str
    iterations: int
    count: float
    """N: the number of independent units (the trace's node count, or P)."""
    expected_max: float
    """Expected slowest-rank time of one iteration."""
    mean: float

    @property
    def standard(self) -> float:
        """E[T], the expected runtime of a synchronising method."""
        return self.iterations * self.expected_max

    @property
    def pipelined(self) -> float:
        """E[T'] = K mu, the expected runtime of a pipelined method."""
        return self.iterations * self.mean


def stationary_model(family: str, dist: Any, iterations: int, count: float) -> StationaryModel:
    """The stationary models for K iterations of N independent ranks drawing from ``dist``.

    Refused (AnalysisError) when ``dist`` has no finite mean.
    """
    if iterations < 1:
        raise AnalysisError(f"the model needs K >= 1 iterations, got {iterations}")
    n = _check_count(count)
    mean = mean_of(dist)
    _refuse_infinite_mean(dist, n, mean)
    return StationaryModel(
        family=family,
        iterations=int(iterations),
        count=float(count),
        expected_max=_expected_max(dist, n),
        mean=mean,
    )


@dataclass(frozen=True)
class Bounds:
    """K times the Cramér and Bertsimas bounds on the expected maximum of N."""

    iterations: int
    count: float
    mean: float
    std: float

    @property
    def cramer(self) -> float:
        return self.iterations * cramer_bound(self.mean, self.std, self.count)

    @property
    def bertsimas(self) -> float:
        return self.iterations * bertsimas_bound(self.mean, self.std, self.count)


@dataclass(frozen=True)
class UniformFits:
    """Per-iteration uniform fits: a_k = min over ranks, s_k = max - min."""

    lower: np.ndarray
    """float64 [K]: a_k."""
    span: np.ndarray
    """float64 [K]: s_k."""
    column_mean: np.ndarray
    """float64 [K]: the sample mean over ranks of each iteration."""

    @property
    def uniform_mean(self) -> np.ndarray:
        """mu_k of the fitted uniform: a_k + s_k / 2."""
        return self.lower + 0.5 * self.span


def uniform_fits(times: np.ndarray) -> UniformFits:
    """Fit a uniform distribution to each iteration (column) of a [P, K] matrix."""
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] == 0:
        raise AnalysisError(f"times must be [P, K >= 1], got shape {x.shape}")
    lower = x.min(axis=0)
    span = x.max(axis=0) - lower
    mean = x.mean(axis=0)
    for a in (lower, span, mean):
        a.setflags(write=False)
    return UniformFits(lower=lower, span=span, column_mean=mean)


@dataclass(frozen=True)
class NonStationaryModel:
    """Ê[T] = sum_k E[max of N uniforms] and Ê[T'] = sum_k mu_k."""

    iterations: int
    count: float
    standard: float
    pipelined: float
    """Sum of the fitted uniform means a_k + s_k / 2."""
    pipelined_sample: float
    """Sum of the per-iteration sample means (no uniform assumption)."""


def nonstationary_model(fits: UniformFits, count: float) -> NonStationaryModel:
    """The non-stationary models from per-iteration uniform fits, with N independent ranks."""
    return NonStationaryModel(
        iterations=int(fits.lower.size),
        count=float(count),
        standard=float(expected_max_uniform(fits.lower, fits.span, count).sum()),
        pipelined=float(fits.uniform_mean.sum()),
        pipelined_sample=float(fits.column_mean.sum()),
    )


def measured_standard(times: np.ndarray) -> float:
    """sum_k max_p T_p^k of a [P, K] matrix: the runtime a lockstep method would have had."""
    return float(np.asarray(times).max(axis=0).sum())


def measured_pipelined(times: np.ndarray) -> float:
    """max_p sum_k T_p^k of a [P, K] matrix: the runtime with no per-iteration synchronisation."""
    return float(np.asarray(times).sum(axis=1).max())
