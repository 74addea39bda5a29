"""What a known injected noise implies for the runtime: the models' known truth.

An iteration's time on one unit is S = X + D, where X is the natural time (its empirical
distribution, from a noise-free run or from the noisy run minus the recorded detours) and D the
injected detour: 0 with probability 1 - p, else drawn from the requested distribution. Then

* a standard method pays, per iteration, E[max over N units of S]:
  the integral over t of 1 - F_S(t)^N, with F_S(t) = (1 - p) F_X(t) + p E_X[F_D(t - X)];
* a pipelined method pays about E[S] = E[X] + p E[D].

The expectation is computed on the exact mixture cdf (the empirical cdf of
X convolved with the analytic cdf of D), so heavy tails are integrated, not sampled. Pure: numpy
and scipy only, no files, no communicators.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, special, stats

from ksptrace.errors import AnalysisError
from ksptrace.noise.spec import NoiseSpec
from ksptrace.studies.variability.stats.detour_cost import (
    PIPELINED_LAG,
    undisturbed_mean,
)
from ksptrace.studies.variability.stats.selection import sorted_quantiles

MAX_NATURAL_SAMPLES = 2000
"""With a continuous detour, the natural sample is reduced to this many quantiles (at the cell
midpoints; E[max] within about 0.1 % of the full sample's, far below run-to-run variability)."""


@dataclass(frozen=True)
class NoiseTruth:
    """The exact per-iteration and whole-run expectations the injected noise implies."""

    count: int
    """N: independent units in the max (ranks, or nodes when all ranks of a node detour
    together)."""
    iterations: int
    natural_mean: float
    detour_mean: float
    """p times the mean detour (per iteration per unit)."""
    max_per_iteration: float
    """E[max over N of X + D]."""

    @property
    def standard(self) -> float:
        """Expected runtime of a standard method: K E[max_N (X + D)]."""
        return self.iterations * self.max_per_iteration

    @property
    def pipelined(self) -> float:
        """Expected runtime of a pipelined method: K (E[X] + p E[D])."""
        return self.iterations * (self.natural_mean + self.detour_mean)


def _detour_cdf(spec: NoiseSpec) -> Any:
    """The cdf of one detour's size, vectorised in closed form (scipy's is ~10x slower)."""
    d = dict(spec.params)
    if spec.dist == "exponential":
        scale = d["scale"]
        return lambda t: -np.expm1(-np.maximum(t, 0.0) / scale)
    if spec.dist == "lognormal":
        median, sigma = d["median"], d["sigma"]

        def lognormal(t: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.log(np.maximum(t, 0.0) / median) / sigma
            return special.ndtr(z)

        return lognormal
    if spec.dist == "pareto":
        scale, shape = d["scale"], d["shape"]
        return lambda t: np.where(t > scale, 1.0 - (scale / np.maximum(t, scale)) ** shape, 0.0)
    if spec.dist == "uniform":
        low, high = d["low"], d["high"]
        if high == low:
            return lambda t: (t >= low).astype(float)
        return lambda t: np.clip((t - low) / (high - low), 0.0, 1.0)
    raise AnalysisError(f"noise '{spec.dist}' has no continuous detour distribution")


def _discrete_expected_max(support: np.ndarray, cdf: np.ndarray, count: int) -> float:
    """E[max of N] of a discrete variable: sum_j s_j (G_j^N - G_{j-1}^N)."""
    g = cdf**count
    return float(support @ np.diff(g, prepend=0.0))


MAX_SORTED = 1_000_000
"""Above this many values, the quantiles come from a seeded subsample of this size (a sort of a
paper-scale trace's 41 M values would cost seconds for no visible gain), drawn with
replacement: a draw without replacement shuffles an index of every value (0.4 to 0.8 s of CPU
at 41 M values, against 10 ms), and at 1 M draws of 41 M the two samples' 2,000 quantiles
differ by their sampling noise alone."""


def _reduce(natural: np.ndarray, size: int) -> np.ndarray:
    x = np.asarray(natural, dtype=float).ravel()
    if x.size > MAX_SORTED:
        x = x[np.random.default_rng(0).integers(0, x.size, MAX_SORTED)]
    x = np.sort(x)
    if x.size > size:  # the quantiles at the cell midpoints: no weight piles up on the extremes
        q = (np.arange(size) + 0.5) / size
        # NaN sorts last and -inf first: numpy's own rules for those (the check then refuses)
        finite = bool(np.isfinite(x[0]) and np.isfinite(x[-1]))
        x = sorted_quantiles(x, q) if finite else np.quantile(x, q)
    return x


def _check(x: np.ndarray, spec: NoiseSpec, count: int) -> None:
    if x.size == 0 or not np.all(np.isfinite(x)) or x[0] < 0:
        raise AnalysisError("natural iteration times must be finite and >= 0 (and at least one)")
    if count < 1:
        raise AnalysisError(f"N must be >= 1, got {count}")
    if spec.active and math.isinf(spec.mean_detour()):
        raise AnalysisError(
            f"noise {spec.text()} has an infinite mean detour: E[max] is infinite; "
            "use a Pareto shape > 1"
        )


GAUSS_NODES, GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(6)
DETOUR_QUANTILES = (*(1 - np.logspace(0, -12, 49)[1:]), 0.5, 0.1, 0.01)
"""Quantiles of the detour that set the integration intervals past the largest natural time."""


def expected_max_with_noise(natural: np.ndarray, spec: NoiseSpec, count: int) -> float:
    """E[max over ``count`` iid copies of X + D] (seconds); X >= 0 from ``natural``.

    Without noise or with a fixed detour, S is discrete and the sum is exact. Otherwise the
    survival function 1 - F_S(t)^N is integrated with 6-point Gauss-Legendre between the
    kinks of F_S and on a quantile grid past them, with a bound on the far tail.
    """
    x_all = np.asarray(natural, dtype=float)
    if not spec.active:
        x = np.sort(x_all.ravel())
        _check(x, spec, count)
        return _discrete_expected_max(x, np.arange(1, x.size + 1) / x.size, count)
    if spec.dist == "fixed":
        x = np.sort(x_all.ravel())
        _check(x, spec, count)
        v, p = spec.param("value"), spec.p
        # Atoms x_i (weight (1 - p)/n) and x_i + v (weight p/n); no subtraction, so no rounding
        # moves an atom across another.
        atoms = np.concatenate((x, x + v))
        weights = np.concatenate((np.full(x.size, 1 - p), np.full(x.size, p))) / x.size
        order = np.argsort(atoms, kind="stable")
        cdf = np.minimum(np.cumsum(weights[order]), 1.0)
        return _discrete_expected_max(atoms[order], cdf, count)
    x = _reduce(x_all, MAX_NATURAL_SAMPLES)
    _check(x, spec, count)
    return _continuous_expected_max(x, spec, count)


def _continuous_expected_max(x: np.ndarray, spec: NoiseSpec, count: int) -> float:
    p = spec.p
    f_d = _detour_cdf(spec)
    family, kwargs = spec.scipy_args()
    dist = getattr(stats, family)(**kwargs)
    quantiles = np.array([float(dist.ppf(q)) for q in DETOUR_QUANTILES])
    lower, upper = float(dist.support()[0]), float(dist.support()[1])
    n = x.size

    def cdf(t: np.ndarray) -> np.ndarray:
        out = np.empty(t.shape)
        for lo in range(0, t.size, 256):  # bounded memory: 256 x n at a time
            chunk = t[lo:lo + 256]
            conv = f_d(chunk[:, None] - x[None, :]).mean(axis=1)
            out[lo:lo + 256] = (1 - p) * np.searchsorted(x, chunk, side="right") / n + p * conv
        return out

    start = float(x[0]) + (lower if p == 1.0 else 0.0)
    # F_S has kinks only where the empirical part jumps (x_i) and where the detour's support
    # begins or ends (x_i + lower, x_i + upper); past max x it is smooth, on the detour's scale.
    kinks = [x, x + lower] + ([x + upper] if np.isfinite(upper) else [])
    edges = np.unique(np.concatenate([start, *kinks, x[-1] + quantiles], axis=None))
    edges = edges[edges >= start]
    left, right = edges[:-1], edges[1:]
    half = (right - left) / 2
    nodes = (left + half)[:, None] + half[:, None] * GAUSS_NODES[None, :]
    survival = 1.0 - cdf(nodes.ravel()).reshape(nodes.shape) ** count
    body = float(np.sum(half * (survival @ GAUSS_WEIGHTS)))
    # Past the last breakpoint, 1 - F_S^N <= N (1 - F_S) <= N p P(D > t - max x): its integral
    # is N p E[(D - u)+] with u the last detour quantile (negligible unless the tail is heavy).
    u = float(quantiles.max())
    if spec.dist == "pareto":
        scale, shape = spec.param("scale"), spec.param("shape")
        excess = scale**shape * u ** (1 - shape) / (shape - 1)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            excess = float(dist.expect(lambda d: d - u, lb=u))
    return start + body + count * p * excess


def noise_truth(natural: np.ndarray, spec: NoiseSpec, count: int, iterations: int) -> NoiseTruth:
    """The standard and pipelined expectations of a run of ``iterations`` under ``spec``."""
    if iterations < 1:
        raise AnalysisError(f"K must be >= 1, got {iterations}")
    x = np.asarray(natural, dtype=float)
    return NoiseTruth(
        count=count,
        iterations=iterations,
        natural_mean=float(x.mean()),
        detour_mean=spec.mean_detour() if spec.active else 0.0,
        max_per_iteration=expected_max_with_noise(x, spec, count),
    )


@dataclass(frozen=True)
class InjectedNoise:
    """What a run's recorded detours say: the spec, how much was injected, the natural time."""

    spec: NoiseSpec
    injected_mean: float
    """Mean injected seconds per rank and iteration (every iteration)."""
    injected_rank_max: float
    """Max over ranks of the seconds injected into the whole solve."""
    natural: np.ndarray
    """At most MAX_NATURAL_SAMPLES quantiles of the per-iteration times minus the recorded detours
    (every iteration). For a standard method these still hold the waits for other ranks'
    detours, so they overstate the natural time; a noise-free run of the same configuration is
    the better source."""
    natural_mean: float
    injected_lockstep: float = 0.0
    """sum over iterations of the max over ranks of the detours: what a method that waits for
    every rank in every iteration pays for them."""
    quiet_iterations: int = 0
    """Iterations in which no rank detoured."""
    quiet_iteration: float | None = None
    """Mean over the quiet iterations of max over ranks of T_p^k (None without one)."""
    quiet_rank_iteration: float | None = None
    """Mean over the quiet iterations and the ranks of T_p^k (None without one)."""
    lagged_iterations: int = 0
    """Iterations in which no rank detoured, nor in the iteration before (a pipelined method
    pays another rank's detour one iteration late: :mod:`.detour_cost`)."""
    lagged_rank_iteration: float | None = None
    """Mean over those iterations and the ranks of T_p^k (None without one)."""

    def detour_cost(self, measured: float, iterations: int, pipelined: bool) -> float | None:
        """What the detours cost this run: KSPSolve minus K undisturbed iterations (seconds):
        for a standard method the slowest rank's iterations without a detour; for a pipelined
        one the mean rank's iterations without a detour in them or in the one before (the lag
        of its split reduction, issue 62). Measured inside the run, so it does not depend on a
        noise-free run's drift from run to run."""
        quiet = self.lagged_rank_iteration if pipelined else self.quiet_iteration
        if quiet is None:
            return None
        return measured - iterations * quiet

    def units(self, nprocs: int, n_nodes: int) -> int:
        """N of the known truth: the independent noise sources (ranks, or nodes with per=node;
        only those ``ranks=`` names, when it is given)."""
        return self.spec.units(nprocs, n_nodes)


def natural_sample(times: np.ndarray, injected: np.ndarray | None = None) -> np.ndarray:
    """At most MAX_NATURAL_SAMPLES quantiles of ``times - injected`` (>= 0), sorted."""
    t = np.asarray(times, dtype=float)
    if injected is not None:
        t = np.maximum(t - np.asarray(injected, dtype=float), 0.0)
    return _reduce(t, MAX_NATURAL_SAMPLES)


def injected_noise(
    times: np.ndarray, injected: np.ndarray | None, spec: NoiseSpec
) -> InjectedNoise:
    """Summarise the detours recorded in a run ([P, K] seconds; None: nothing recorded)."""
    t = np.asarray(times, dtype=float)
    if injected is None:  # a run without noise: no detour anywhere, nothing to subtract
        natural = t if t.size == 0 or float(t.min()) >= 0.0 else np.maximum(t, 0.0)
        return InjectedNoise(
            spec=spec, injected_mean=0.0, injected_rank_max=0.0,
            natural=_reduce(natural, MAX_NATURAL_SAMPLES),
            natural_mean=float(natural.mean()), injected_lockstep=0.0,
            quiet_iterations=int(t.shape[1]) if t.ndim == 2 else 0,
            quiet_iteration=float(t.max(axis=0).mean()) if t.size else None,
            quiet_rank_iteration=float(t.mean()) if t.size else None,
            lagged_iterations=int(t.shape[1]) if t.ndim == 2 else 0,
            lagged_rank_iteration=float(t.mean()) if t.size else None)
    inj = np.asarray(injected, dtype=float)
    if inj.shape != t.shape:
        raise AnalysisError(f"injected detours have shape {inj.shape}, the times {t.shape}")
    natural = np.maximum(t - inj, 0.0)
    quiet = ~np.any(inj > 0, axis=0) if inj.size else np.zeros(0, dtype=bool)
    count = int(np.count_nonzero(quiet))
    return InjectedNoise(
        spec=spec,
        injected_mean=float(inj.mean()) if inj.size else 0.0,
        injected_rank_max=float(inj.sum(axis=1).max()) if inj.size else 0.0,
        natural=_reduce(natural, MAX_NATURAL_SAMPLES),
        natural_mean=float(natural.mean()),
        injected_lockstep=float(inj.max(axis=0).sum()) if inj.size else 0.0,
        quiet_iterations=count,
        quiet_iteration=float(t[:, quiet].max(axis=0).mean()) if count else None,
        quiet_rank_iteration=float(t[:, quiet].mean()) if count else None,
        **_lagged(t, inj),
    )


def _lagged(t: np.ndarray, inj: np.ndarray) -> dict[str, Any]:
    if t.ndim != 2 or t.size == 0:
        return {}
    mean, count = undisturbed_mean(t, inj, PIPELINED_LAG, pipelined=True)
    return {"lagged_iterations": int(count),
            "lagged_rank_iteration": float(mean) if int(count) else None}
