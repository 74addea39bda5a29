"""Monte Carlo simulation of Krylov runs from the distributions of the uniform parameters.

Each iteration k draws a_k and s_k from Johnson S_U fits of the measured {a_k} and {s_k} (from
the normal fit of the data instead where the S_U fit collapsed to its normal limit); every
one of N independent ranks then takes T_p^k ~ Uniform(a_k, a_k + s_k). A standard method takes
sum_k max_p T_p^k and a pipelined one max_p sum_k T_p^k. The maximum of N uniforms is drawn
exactly as a_k + s_k V^(1/N) (V uniform), so the standard method costs O(K) per run whatever N;
the pipelined one draws every rank's times, in blocks of iterations to bound the memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special as sc

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats.fitting import JohnsonSU, fit_johnsonsu
from ksptrace.studies.variability.stats.models import UniformFits
from ksptrace.studies.variability.stats.outliers import jsu_collapsed

BLOCK_ELEMENTS = 4_000_000
"""Uniform draws generated at once for the pipelined simulation."""


@dataclass(frozen=True)
class NormalLimit:
    """The normal distribution a collapsed Johnson S_U fit tends to: the data's mean and std."""

    mean: float
    std: float


@dataclass(frozen=True)
class ParameterFits:
    """Johnson S_U fits of the per-iteration uniform parameters a_k (lower) and s_k (span).

    When a fit collapsed to its normal limit (``outliers.jsu_collapsed``), its parameters are
    kept for the record but the simulation draws from ``lower_normal`` / ``span_normal``, the
    maximum-likelihood normal fit of the same data, instead of from the arbitrary huge
    parameters where the optimiser stopped.
    """

    lower: JohnsonSU
    span: JohnsonSU
    lower_normal: NormalLimit | None = None
    span_normal: NormalLimit | None = None


def _normal_if_collapsed(fit: JohnsonSU, data: np.ndarray, what: str) -> NormalLimit | None:
    """The normal limit if the fit collapsed to it (or reached the engine's bound on the way);
    AnalysisError if the fit is not a verified maximum otherwise (never used by the model)."""
    if fit.status in ("not converged", "degenerate"):
        raise AnalysisError(f"the Johnson S_U fit of {what} is {fit.status}, so the Monte Carlo "
                            "has no verified distribution to draw from")
    if fit.status != "boundary" and not jsu_collapsed(fit, data):
        return None
    return NormalLimit(mean=float(np.mean(data)), std=float(np.std(data)))


def fit_parameters(fits: UniformFits, fit_size: int | None = None, seed: int = 0) -> ParameterFits:
    """Fit Johnson S_U distributions to {a_k} and {s_k} (normal limits where a fit collapsed)."""
    if fits.lower.size < 8:
        raise AnalysisError(
            f"{fits.lower.size} iterations are too few to fit the distribution of a_k and s_k; "
            "record more iterations (K >= 8)"
        )
    lower = fit_johnsonsu(fits.lower, fit_size, seed)
    span = fit_johnsonsu(fits.span, fit_size, seed)
    return ParameterFits(
        lower=lower,
        span=span,
        lower_normal=_normal_if_collapsed(lower, fits.lower, "a_k"),
        span_normal=_normal_if_collapsed(span, fits.span, "s_k"),
    )


@dataclass(frozen=True)
class Simulation:
    """Simulated runtimes of ``runs`` independent runs of K iterations on N ranks."""

    iterations: int
    count: int
    seed: int
    standard: np.ndarray
    """float64 [runs]: sum_k max_p T_p^k of each run."""
    pipelined: np.ndarray
    """float64 [runs]: max_p sum_k T_p^k of each run."""

    @property
    def runs(self) -> int:
        return int(self.standard.size)

    @property
    def standard_mean(self) -> float:
        return float(self.standard.mean())

    @property
    def pipelined_mean(self) -> float:
        return float(self.pipelined.mean())

    @property
    def standard_stderr(self) -> float | None:
        """Standard error of ``standard_mean`` over the runs (None with one run)."""
        return _stderr(self.standard)

    @property
    def pipelined_stderr(self) -> float | None:
        """Standard error of ``pipelined_mean`` over the runs (None with one run)."""
        return _stderr(self.pipelined)


def _stderr(values: np.ndarray) -> float | None:
    if values.size < 2:
        return None
    return float(values.std(ddof=1) / np.sqrt(values.size))


def _draw(frozen: Any, normal: NormalLimit | None, size: int, rng: np.random.Generator
          ) -> np.ndarray:
    if normal is not None:
        return rng.normal(normal.mean, normal.std, size)
    if frozen.dist.name == "johnsonsu":
        return _johnsonsu_draws(frozen, size, rng)
    return np.asarray(frozen.rvs(size=size, random_state=rng), dtype=np.float64)


def _johnsonsu_draws(frozen: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """Johnson S_U draws by inversion of its closed-form quantile function,
    ``loc + scale sinh((Phi^-1(V) - a) / b)`` with V uniform from ``rng``: no argument checks
    per call (scipy's ``rvs`` costs 45 µs a call, 0.05 s of a demo analysis)."""
    a, b, loc, scale = frozen.args
    z = sc.ndtri(rng.uniform(size=size))
    return np.asarray(loc + scale * np.sinh((z - a) / b), dtype=np.float64)


def _draw_parameters(
    params: ParameterFits, iterations: int, rng: np.random.Generator, frozen: tuple[Any, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """a_k and s_k of one run. ``frozen`` holds the two fits' scipy distributions, made once per
    simulation (making one costs about as much as drawing a thousand values)."""
    lower_dist, span_dist = frozen
    lower = _draw(lower_dist, params.lower_normal, iterations, rng)
    span = _draw(span_dist, params.span_normal, iterations, rng)
    # A time cannot be negative: the far left tail of a fitted S_U is cut at zero.
    return np.maximum(lower, 0.0), np.maximum(span, 0.0)


def simulate_given(
    lower: np.ndarray, span: np.ndarray, count: int, rng: np.random.Generator
) -> tuple[float, float]:
    """One run with given a_k and s_k: (sum_k max_p T_p^k, max_p sum_k T_p^k)."""
    k = lower.size
    v = rng.random(k)
    standard = float(np.sum(lower + span * np.exp(np.log1p(-v) / count)))
    sums = np.zeros(count)
    block = max(1, BLOCK_ELEMENTS // count)
    for k0 in range(0, k, block):
        u = rng.random((count, min(block, k - k0)))
        sums += u @ span[k0 : k0 + block]
    pipelined = float(lower.sum() + sums.max())
    return standard, pipelined


def simulate(
    params: ParameterFits,
    iterations: int,
    count: int,
    runs: int = 16,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
) -> Simulation:
    """Simulate ``runs`` seeded runs of K iterations on N independent ranks."""
    if iterations < 1 or count < 1 or runs < 1:
        raise AnalysisError(
            f"a simulation needs K, N and runs >= 1, got K={iterations}, N={count}, runs={runs}"
        )
    rng = np.random.default_rng(seed)
    standard = np.empty(runs)
    pipelined = np.empty(runs)
    frozen = (params.lower.frozen(), params.span.frozen())
    for r in range(runs):
        lower, span = _draw_parameters(params, iterations, rng, frozen)
        standard[r], pipelined[r] = simulate_given(lower, span, int(count), rng)
        if progress is not None:
            progress((r + 1) / runs)
    standard.setflags(write=False)
    pipelined.setflags(write=False)
    return Simulation(
        iterations=int(iterations),
        count=int(count),
        seed=seed,
        standard=standard,
        pipelined=pipelined,
    )


@dataclass(frozen=True)
class Prediction:
    """A simulated runtime next to a measured one."""

    source: str
    """What the parameters were fitted on."""
    target: str
    """What is predicted."""
    pipelined: bool
    simulated: float
    measured: float

    @property
    def relative_error(self) -> float:
        return (self.simulated - self.measured) / self.measured


def predict(
    params: ParameterFits,
    iterations: int,
    count: int,
    measured: float,
    pipelined: bool,
    source: str,
    target: str,
    runs: int = 16,
    seed: int = 0,
) -> Prediction:
    """Predict a runtime by simulation; a priori when ``params`` come from another trace."""
    if not measured > 0:
        raise AnalysisError(f"the measured runtime must be > 0 s to compare with, got {measured}")
    sim = simulate(params, iterations, count, runs=runs, seed=seed)
    value = sim.pipelined_mean if pipelined else sim.standard_mean
    return Prediction(
        source=source, target=target, pipelined=pipelined, simulated=value, measured=measured
    )
