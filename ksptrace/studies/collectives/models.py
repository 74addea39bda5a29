"""Analytical models of collective times over message size, fitted to measurements.

The models of Wickramasinghe and Lumsdaine's survey (section 3.1), for the time T of a call
with m bytes per rank:

- Hockney: ``T = alpha + beta*m`` (plus ``gamma*m`` for a reduction: the local compute);
- LogGP: ``T = L + 2o + (m - 1)*G``;
- PLogP: ``T = L + g(m)`` with ``g`` a function of m, here continuous and piecewise linear,
  its breakpoints (a protocol switch, a cache size) found from the data.

On one curve some parameters cannot be told apart, and the fits say so rather than invent
them: Hockney's ``beta`` and ``gamma`` have the same slope (``gamma`` is fitted with ``beta``
given, from a collective that does not reduce), and LogGP's ``L`` and ``o`` form one intercept
(``o`` splits it only when given). Fits weigh each point by 1/T (relative error), because
message sizes span six decades; parameters are non-negative.

Each fit reports its relative residual per size and the sizes where it *breaks down* (relative
error above a tolerance). :func:`allreduce_time` gives the section 3.1 (Table 3) and Thakur,
Rabenseifner and Gropp (2005) predictions of the ring, recursive doubling and Rabenseifner
allreduce from alpha, beta, gamma.

Pure: numpy arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from scipy.optimize import nnls

from ksptrace.errors import AnalysisError

BREAKDOWN = 0.25
"""A model breaks down at a size where it misses the measured time by more than 25 %."""
ALLREDUCE_ALGORITHMS = ("ring", "recursive_doubling", "rabenseifner")


@dataclass(frozen=True)
class ModelFit:
    """One model fitted to one curve T(m)."""

    model: str
    params: Mapping[str, float]
    sizes: np.ndarray
    """int64 [M]: message sizes (bytes)."""
    measured: np.ndarray
    predicted: np.ndarray
    tolerance: float = BREAKDOWN
    note: str = ""
    breakpoints: tuple[int, ...] = field(default=())
    """PLogP: sizes where the slope of g(m) changes."""

    @property
    def relative_residuals(self) -> np.ndarray:
        """(predicted - measured) / measured per size."""
        return np.asarray((self.predicted - self.measured) / self.measured)

    @property
    def rms_relative(self) -> float:
        return float(np.sqrt(np.mean(self.relative_residuals ** 2)))

    @property
    def breaks_down_at(self) -> np.ndarray:
        """The sizes where the relative error exceeds the tolerance."""
        return np.asarray(self.sizes[np.abs(self.relative_residuals) > self.tolerance])

    def describe(self) -> str:
        bad = self.breaks_down_at
        where = (f"breaks down (>{self.tolerance:.0%}) at {_sizes_text(bad)}" if bad.size
                 else f"within {self.tolerance:.0%} everywhere")
        return f"{self.model}: rms relative error {self.rms_relative:.1%}, {where}"


def _sizes_text(sizes: np.ndarray) -> str:
    shown = ", ".join(_human(int(s)) for s in sizes[:6])
    return shown + (f" and {sizes.size - 6} more" if sizes.size > 6 else "")


def _human(nbytes: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def _checked(sizes: np.ndarray, times: np.ndarray, need: int) -> tuple[np.ndarray, np.ndarray]:
    m = np.asarray(sizes, dtype=np.float64).ravel()
    t = np.asarray(times, dtype=np.float64).ravel()
    if m.shape != t.shape:
        raise AnalysisError(f"sizes and times differ in length ({m.size} and {t.size})")
    if np.unique(m).size < need:
        raise AnalysisError(f"this fit needs at least {need} distinct message sizes, got "
                            f"{np.unique(m).size}; measure more sizes")
    if not (np.isfinite(t).all() and (t > 0).all() and (m >= 0).all()):
        raise AnalysisError("times must be positive and finite, sizes non-negative")
    return m, t


def _relative_nnls(columns: np.ndarray, t: np.ndarray,
                   target: np.ndarray | None = None) -> np.ndarray:
    """Non-negative coefficients c minimising sum(((columns @ c - target) / t)^2), target
    defaulting to t (the relative squared error)."""
    scale = np.abs(columns).max(axis=0)
    scale[scale == 0] = 1.0
    goal = np.ones_like(t) if target is None else target / t
    coef, _ = nnls(columns / scale / t[:, None], goal)
    return np.asarray(coef / scale)


def fit_hockney(sizes: np.ndarray, times: np.ndarray, beta: float | None = None,
                tolerance: float = BREAKDOWN) -> ModelFit:
    """``alpha + beta*m``; with ``beta`` given (a reduction), ``alpha + (beta + gamma)*m``
    and ``gamma`` is fitted."""
    m, t = _checked(sizes, times, 2)
    if beta is None:
        alpha, slope = _relative_nnls(np.column_stack([np.ones_like(m), m]), t)
        params = {"alpha": float(alpha), "beta": float(slope)}
        note = "a reduction's slope is beta + gamma: give beta to separate gamma"
        predicted = alpha + slope * m
    else:
        if beta < 0:
            raise AnalysisError(f"beta must be >= 0, got {beta}")
        alpha, gamma = _relative_nnls(np.column_stack([np.ones_like(m), m]), t, t - beta * m)
        params = {"alpha": float(alpha), "beta": float(beta), "gamma": float(gamma)}
        note = "beta given (from a collective without reduction); gamma fitted"
        predicted = alpha + (beta + gamma) * m
    return ModelFit("hockney", MappingProxyType(params), m.astype(np.int64), t, predicted,
                    tolerance, note)


def fit_loggp(sizes: np.ndarray, times: np.ndarray, o: float | None = None,
              tolerance: float = BREAKDOWN) -> ModelFit:
    """``L + 2o + (m - 1)*G``. One curve fixes ``L + 2o`` and ``G``; ``o`` given splits L."""
    m, t = _checked(sizes, times, 2)
    c, g = _relative_nnls(np.column_stack([np.ones_like(m), np.maximum(m - 1, 0)]), t)
    params = {"L_plus_2o": float(c), "G": float(g)}
    note = "L and o are one intercept on a single curve; give o to split them"
    if o is not None:
        params.update(o=float(o), L=float(c - 2 * o))
        note = "o given; L = intercept - 2o"
    predicted = c + np.maximum(m - 1, 0) * g
    return ModelFit("loggp", MappingProxyType(params), m.astype(np.int64), t, predicted,
                    tolerance, note)


def _pieces(m: np.ndarray, breaks: tuple[float, ...]) -> np.ndarray:
    """Columns [1, bytes of m in piece 0, in piece 1, ...]: the coefficients are L and the
    slope of g on each piece, so g is continuous and, with non-negative slopes, increasing."""
    edges = (0.0, *breaks, np.inf)
    return np.column_stack([np.ones_like(m), *(np.clip(m - lo, 0.0, hi - lo)
                                               for lo, hi in itertools.pairwise(edges))])


BREAK_PENALTY = 5.0
"""Each PLogP breakpoint costs ``BREAK_PENALTY * ln(n)`` in the selection score. BIC would
charge 2 ln(n) for its two parameters (the new slope and the location), but the location is
the best of every measured size, a search BIC does not pay for: with 2 ln(n), a second,
spurious break fitted the noise in 4 to 7 of 20 noisy draws of a one-break curve (issue 32);
with 5 ln(n), none of 40 at 0.5-2 % noise (tests/studies/collectives/test_models.py)."""


EXACT = 1e-18
"""A mean squared relative error below this is an exact fit (errors of 1e-9, the precision of
the least-squares solve): exact data then choose the fewest breakpoints, not the ones that
shave rounding error."""


def fit_plogp(sizes: np.ndarray, times: np.ndarray, max_breaks: int = 2,
              tolerance: float = BREAKDOWN) -> ModelFit:
    """``L + g(m)``, g continuous and piecewise linear with up to ``max_breaks`` breakpoints
    at measured sizes, chosen by the smallest relative error plus BREAK_PENALTY per break.
    L and the slopes are non-negative (time does not fall as messages grow)."""
    m, t = _checked(sizes, times, 3)
    candidates = np.unique(m)[1:-1]
    best: tuple[float, tuple[float, ...], np.ndarray] | None = None
    n = m.size
    for k in range(max_breaks + 1):
        for breaks in itertools.combinations(candidates, k):
            x = _pieces(m, breaks)
            coef = _relative_nnls(x, t)
            rss = float(np.sum(((x @ coef - t) / t) ** 2))
            score = n * np.log(max(rss / n, EXACT)) + (2 + BREAK_PENALTY * k) * np.log(n)
            if best is None or score < best[0] - 1e-9:
                best = (score, tuple(breaks), coef)
    assert best is not None
    _, breaks, coef = best
    predicted = _pieces(m, breaks) @ coef
    params = {"L": float(coef[0])}
    params.update({f"slope_{i}": float(s) for i, s in enumerate(coef[1:])})
    return ModelFit("plogp", MappingProxyType(params), m.astype(np.int64), t, predicted,
                    tolerance, f"{len(breaks)} breakpoint(s); slope_i is g'(m) on piece i",
                    tuple(int(b) for b in breaks))


def allreduce_time(algorithm: str, nprocs: int, sizes: np.ndarray, alpha: float, beta: float,
                   gamma: float) -> np.ndarray:
    """Predicted allreduce time (Hockney parameters) of ``algorithm`` on ``nprocs`` ranks.

    ring: 2(P-1)(alpha + beta*ceil(m/P)) + (P-1)*gamma*ceil(m/P)   (survey, Table 3)
    recursive_doubling: log2(P)*(alpha + beta*m + gamma*m)          (survey, Table 3)
    rabenseifner: 2*log2(P)*alpha + 2(P-1)/P*beta*m + (P-1)/P*gamma*m  (Thakur et al. 2005)
    """
    p = int(nprocs)
    if p < 2:
        raise AnalysisError(f"an allreduce model needs P >= 2, got {p}")
    m = np.asarray(sizes, dtype=np.float64)
    lg = float(np.log2(p))
    if algorithm == "ring":
        piece = np.ceil(m / p)
        return np.asarray(2 * (p - 1) * (alpha + beta * piece) + (p - 1) * gamma * piece)
    if algorithm == "recursive_doubling":
        return np.asarray(lg * (alpha + (beta + gamma) * m))
    if algorithm == "rabenseifner":
        share = (p - 1) / p
        return np.asarray(2 * lg * alpha + 2 * share * beta * m + share * gamma * m)
    raise AnalysisError(f"no allreduce model for {algorithm!r}; known: "
                        f"{', '.join(ALLREDUCE_ALGORITHMS)}")
