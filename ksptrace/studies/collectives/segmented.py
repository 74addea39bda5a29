"""The survey's allreduce models with segmentation, and the optimal segment size (Wickramasinghe
and Lumsdaine, section 3.1, Table 3), in Hockney's and in LogGP's parameters.

A segmented ring cuts each rank's m bytes into ``n_s = m / m_s`` segments of ``m_s`` bytes and
pipelines them around the ring: ``P + n_s - 2`` steps move and reduce one segment each, then
``P - 1`` steps pass the reduced pieces on. Small segments pay the start-up cost more often,
large ones fill the pipeline slowly; the derivative of T in ``m_s`` gives the optimum.

- Hockney: ``T = (P + n_s - 2)(alpha + (beta + gamma) m_s) + (P - 1)(alpha + beta ceil(m/P))``,
  optimum ``m_s = sqrt(m alpha / ((P - 2)(beta + gamma)))``;
- LogGP: ``T = (P - 1)(L + 2o + (m_s - 1)G) + (n_s - 1)(max(g, gamma m_s + o) + (m_s - 1)G)
  + (P - 1)(L + 2o + (ceil(m/P) - 1)G)``, optimum ``sqrt(m (g - G) / ((P - 2) G))`` where the
  gap g dominates, ``sqrt(m (o - G) / ((P - 2) G - gamma))`` where the overhead and the
  reduction do;
- LogGP without segments: ring ``2(P - 1)(L + 2o + (ceil(m/P) - 1)G) + (P - 1) gamma ceil(m/P)``
  and recursive doubling ``log2(P)(L + 2o + (m - 1)G) + log2(P) gamma m``.

The closed forms assume a continuous ``n_s``; a runtime takes whole segments of a size it
supports, so :func:`best_segment` also evaluates the model at every power-of-two segment size
and returns the best one beside the continuous optimum. Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError


@dataclass(frozen=True)
class Hockney:
    alpha: float
    beta: float
    gamma: float = 0.0


@dataclass(frozen=True)
class LogGP:
    L: float
    o: float
    G: float
    g: float = 0.0
    gamma: float = 0.0


@dataclass(frozen=True)
class SegmentChoice:
    """The optimal segment size of one message size: continuous and among powers of two."""

    message_bytes: int
    continuous: float | None
    """The closed form's optimum (None where the model has no interior optimum)."""
    best_power_of_two: int
    """The power-of-two segment size (1 B .. m) with the least predicted time."""
    predicted_seconds: float
    """The model's time at ``best_power_of_two``."""
    unsegmented_seconds: float
    """The model's time with one segment of m bytes (m_s = m)."""


def _check(nprocs: int, m: float, m_s: float) -> None:
    if nprocs < 3:
        raise AnalysisError(f"a segmented ring model needs P >= 3 (its optimum divides by P - 2),"
                            f" got P = {nprocs}")
    if not (m >= 1 and 1 <= m_s <= m):
        raise AnalysisError(f"segment size must be in 1..m bytes, got m_s = {m_s} for m = {m}")


def segmented_ring_hockney(p: Hockney, nprocs: int, m: float, m_s: float) -> float:
    _check(nprocs, m, m_s)
    n_s = math.ceil(m / m_s)
    return float((nprocs + n_s - 2) * (p.alpha + (p.beta + p.gamma) * m_s)
                 + (nprocs - 1) * (p.alpha + p.beta * math.ceil(m / nprocs)))


def segmented_ring_loggp(p: LogGP, nprocs: int, m: float, m_s: float) -> float:
    _check(nprocs, m, m_s)
    n_s = math.ceil(m / m_s)
    hop = p.L + 2 * p.o
    return float((nprocs - 1) * (hop + (m_s - 1) * p.G)
                 + (n_s - 1) * (max(p.g, p.gamma * m_s + p.o) + (m_s - 1) * p.G)
                 + (nprocs - 1) * (hop + (math.ceil(m / nprocs) - 1) * p.G))


def ring_loggp(p: LogGP, nprocs: int, m: np.ndarray) -> np.ndarray:
    piece = np.ceil(np.asarray(m, dtype=np.float64) / nprocs)
    return np.asarray(2 * (nprocs - 1) * (p.L + 2 * p.o + (piece - 1) * p.G)
                      + (nprocs - 1) * p.gamma * piece)


def recursive_doubling_loggp(p: LogGP, nprocs: int, m: np.ndarray) -> np.ndarray:
    mm = np.asarray(m, dtype=np.float64)
    lg = math.log2(nprocs)
    return np.asarray(lg * (p.L + 2 * p.o + (mm - 1) * p.G) + lg * p.gamma * mm)


def optimal_segment_hockney(p: Hockney, nprocs: int, m: float) -> float | None:
    slope = (nprocs - 2) * (p.beta + p.gamma)
    if nprocs < 3 or slope <= 0 or p.alpha <= 0:
        return None
    return math.sqrt(m * p.alpha / slope)


def optimal_segment_loggp(p: LogGP, nprocs: int, m: float) -> float | None:
    """Table 3's two cases; each is used only where its condition holds at its own optimum."""
    if nprocs < 3:
        return None
    if p.g > p.G and p.G > 0:
        gap = math.sqrt(m * (p.g - p.G) / ((nprocs - 2) * p.G))
        if p.g >= p.o + p.gamma * gap:
            return gap
    denominator = (nprocs - 2) * p.G - p.gamma
    if p.o > p.G and denominator > 0:
        over = math.sqrt(m * (p.o - p.G) / denominator)
        if p.g < p.o + p.gamma * over:
            return over
    return None


def best_segment(params: Hockney | LogGP, nprocs: int, m: int) -> SegmentChoice:
    """The optimal segment size of an m-byte allreduce on ``nprocs`` ranks under ``params``."""
    def time(m_s: float) -> float:
        if isinstance(params, Hockney):
            return segmented_ring_hockney(params, nprocs, m, m_s)
        return segmented_ring_loggp(params, nprocs, m, m_s)

    continuous = (optimal_segment_hockney(params, nprocs, m) if isinstance(params, Hockney)
                  else optimal_segment_loggp(params, nprocs, m))
    if m < 1:
        raise AnalysisError(f"message size must be >= 1 byte, got {m}")
    sizes = [1 << k for k in range(int(math.log2(m)) + 1)]
    times = [time(s) for s in sizes]
    best = int(np.argmin(times))
    return SegmentChoice(message_bytes=int(m),
                         continuous=None if continuous is None else min(max(continuous, 1.0), m),
                         best_power_of_two=sizes[best], predicted_seconds=float(times[best]),
                         unsegmented_seconds=time(m))


def fit_segmented_ring_hockney(nprocs: np.ndarray, m: np.ndarray, m_s: np.ndarray,
                               seconds: np.ndarray) -> Hockney:
    """alpha, beta, gamma from segmented-ring times at several (P, m, m_s): the model is linear
    in them, so a non-negative least-squares fit in relative error recovers them."""
    from scipy.optimize import nnls

    p, mm, ss, t = (np.asarray(a, dtype=np.float64).ravel() for a in (nprocs, m, m_s, seconds))
    if not (p.size == mm.size == ss.size == t.size) or p.size < 3:
        raise AnalysisError("a segmented-ring fit needs >= 3 measurements with P, m, m_s and "
                            "time each")
    if not (np.isfinite(t).all() and (t > 0).all()):
        raise AnalysisError("times must be positive and finite")
    steps = p + np.ceil(mm / ss) - 2
    piece = np.ceil(mm / p)
    columns = np.column_stack([steps + p - 1, steps * ss + (p - 1) * piece, steps * ss])
    scale = columns.max(axis=0)
    coef, _ = nnls(columns / scale / t[:, None], np.ones_like(t))
    alpha, beta, gamma = coef / scale
    return Hockney(alpha=float(alpha), beta=float(beta), gamma=float(gamma))
