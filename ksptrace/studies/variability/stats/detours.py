"""A per-rank iteration-time model that holds in the tail: a bulk plus a detour process (issue
63), for E[Σₖ maxₚ Tₚᵏ] at a larger P than the runs it is fitted on.

Real traces have 1–3 % of iterations with detours many times the median; no single family holds
both the bulk and the detours, and E[max of N] at large N is decided by the detours. The model
is the shape the noise harness injects:

    T = B + D,   B ~ Normal(μ, σ),   D = 0 with probability 1 − r, else Exponential(θ).

Fitted on the pooled Tₚᵏ of smaller-P runs: μ and σ robustly (median, 1.4826·MAD: the detours
barely move them); the detours are the times above t₀ = μ + ``CUT``·σ; for an exponential size
their excess over t₀ is again Exponential(θ) (memoryless), so θ is the mean excess, and the rate
of all detours is r = (share above t₀)·e^{(t₀ − μ)/θ}. The CDF of T is then (1 − r)·Φ plus r
times the exponentially modified Gaussian's, in closed form, and

    E[max of N] = ∫₀^∞ 1 − F(x)ᴺ dx,   E[Σₖ maxₚ Tₚᵏ] = K·E[max of N]

(each iteration's ranks independent, as in the paper's stationary model). Its standard error
comes from the detour size's, 1/√m of it with m detours (an exponential mean), carried through
the integral: at large N the detours decide E[max of N], so a source with few detours predicts
no better than that, whatever the method.

The tail check fits on a seeded random half of the iterations (:func:`split_columns`, the
halves of :mod:`.halves`) and compares the model's 99th percentile with the other half's: a
miss of more than ``TAIL_FLAG`` that lies outside the held-out q99's own 95 % interval is
flagged. Pure: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special as sc

from ksptrace.errors import AnalysisError

CUT = 4.0
"""Standard deviations of the bulk above its median where detours begin."""
MIN_DETOURS = 10
"""Fewer detours above the cut fit no size distribution (the model is the bulk alone)."""
TAIL_FLAG = 0.25
"""A model q99 further than this from the held-out data's is flagged."""
GRID = 20_000


@dataclass(frozen=True)
class DetourModel:
    """Bulk Normal(mu, sigma) plus detours at rate ``rate`` of mean size ``size`` (s)."""

    mu: float
    sigma: float
    rate: float
    size: float
    detours: int
    """The detours above the cut the fit rests on."""

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P(T ≤ x)."""
        z = (np.asarray(x, dtype=np.float64) - self.mu) / self.sigma
        bulk = sc.ndtr(z)
        if self.rate <= 0.0:
            return np.asarray(bulk)
        lam_s = self.sigma / self.size
        # exponentially modified Gaussian: Φ(z) − exp(−λσ z + (λσ)²/2) Φ(z − λσ), in logs
        log_tail = -lam_s * z + 0.5 * lam_s**2 + sc.log_ndtr(z - lam_s)
        emg = bulk - np.exp(log_tail)
        return np.asarray((1.0 - self.rate) * bulk + self.rate * emg)

    def expected_max(self, count: int) -> float:
        """E[max of ``count``] independent draws of T, by integrating 1 − F(x)^count."""
        if count < 1:
            raise AnalysisError(f"E[max of N] needs N >= 1, got {count}")
        top = self.mu + 10.0 * self.sigma
        if self.rate > 0.0:
            top += self.size * (math.log(max(count * self.rate, 1.0)) + 30.0)
        x = np.linspace(0.0, top, GRID)
        with np.errstate(divide="ignore"):
            log_f = np.log(np.clip(self.cdf(x), 0.0, 1.0))
        below = -np.expm1(count * log_f)
        step = x[1] - x[0]  # the trapezoid rule on the even grid
        return float(step * (below.sum() - 0.5 * (below[0] + below[-1])))

    def expected_max_se(self, count: int) -> float:
        """The standard error of :meth:`expected_max` from the detour size's, size/√m with m
        the detours the fit rests on (0 without detours: the bulk alone is well determined)."""
        if self.rate <= 0.0 or self.detours < 1:
            return 0.0
        bigger = replace(self, size=self.size * (1.0 + 1.0 / math.sqrt(self.detours)))
        return abs(bigger.expected_max(count) - self.expected_max(count))

    def quantile(self, q: float) -> float:
        """The q-quantile of T (bisection on the CDF)."""
        lo, hi = self.mu - 10 * self.sigma, self.mu + 10 * self.sigma + 60 * self.size
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if float(self.cdf(np.array([mid]))[0]) < q:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)


def fit_detours(times: np.ndarray) -> DetourModel:
    """The bulk-plus-detours model of the pooled iteration times ``times`` (s, any shape)."""
    t = np.asarray(times, dtype=np.float64).ravel()
    if t.size < 100 or not np.all(np.isfinite(t)):
        raise AnalysisError(f"a detour model needs at least 100 finite iteration times, got "
                            f"{t.size}; record more iterations or ranks")
    mu = float(np.median(t))
    sigma = 1.4826 * float(np.median(np.abs(t - mu)))
    if not sigma > 0:
        raise AnalysisError("the iteration times have no spread around their median (MAD 0): "
                            "no bulk to fit")
    cut = mu + CUT * sigma
    above = t[t > cut]
    if above.size < MIN_DETOURS:
        return DetourModel(mu, sigma, 0.0, 0.0, int(above.size))
    size = float((above - cut).mean())
    share = above.size / t.size - float(sc.ndtr(-CUT))
    rate = min(1.0, max(share, 0.0) * math.exp((cut - mu) / size))
    return DetourModel(mu, sigma, rate, size, int(above.size))


Z_Q99 = 1.96 * math.sqrt(2.0)
"""The held-out q99's interval is the 95 % one of a difference of two estimates of about equal
error, the model's (fitted on one half) and the data's (the other half)."""


def q99_interval(values: np.ndarray) -> tuple[float, float, float]:
    """The 99th percentile of ``values`` and its distribution-free interval: the order
    statistics n·0.99 ∓ :data:`Z_Q99`·√(n·0.99·0.01) (binomial ranks). At n = 2000 it spans
    about the 8th to the 32nd largest value: where 1–2 % of the values are detours, a q99 that
    falls between the bulk and the detours is that uncertain."""
    x = np.asarray(values, dtype=np.float64).ravel()
    n = x.size
    half = Z_Q99 * math.sqrt(n * 0.99 * 0.01)
    lo = max(0, math.floor(0.99 * n - half) - 1)
    hi = min(n - 1, math.ceil(0.99 * n + half))
    part = np.partition(x, [lo, hi])
    return float(np.quantile(x, 0.99)), float(part[lo]), float(part[hi])


@dataclass(frozen=True)
class TailCheck:
    """The model fitted on one half of the iterations against the other half's q99."""

    model_q99: float
    data_q99: float
    data_low: float = -math.inf
    data_high: float = math.inf
    """The held-out q99's 95 % interval (:func:`q99_interval`)."""

    @property
    def miss(self) -> float:
        """(model − data) / data."""
        return (self.model_q99 - self.data_q99) / self.data_q99

    @property
    def flagged(self) -> bool:
        """A miss beyond :data:`TAIL_FLAG` and outside the held-out q99's own interval (the
        data's sampling error is no miss of the model)."""
        inside = self.data_low <= self.model_q99 <= self.data_high
        return not (abs(self.miss) <= TAIL_FLAG or inside)


def split_columns(k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random half of the iteration indices 0..k-1 and the other half, each sorted:
    both halves span the whole run (drift falls on both) and no restart-cycle position falls
    wholly in one (as even positions would with alternate iterations)."""
    if k < 4:
        raise AnalysisError(f"a held-out half needs 4 or more iterations, got {k}")
    order = np.random.default_rng(seed).permutation(k)
    return np.sort(order[: k // 2]), np.sort(order[k // 2:])


def tail_check(times: np.ndarray, seed: int = 0) -> TailCheck:
    """Fit on a random half of the iterations of ``times`` (ranks × iterations), check q99 on
    the other half."""
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 2 or t.shape[1] < 4:
        raise AnalysisError(f"a tail check needs ranks × iterations (4 or more), got {t.shape}")
    first, second = split_columns(t.shape[1], seed)
    model = fit_detours(t[:, first])
    return TailCheck(model.quantile(0.99), *q99_interval(t[:, second]))
