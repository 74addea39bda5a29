"""The transport's steps: one set of breakpoints shared by PLogP's measured functions of m.

A protocol switch (Open MPI's shared-memory eager limit; the fast boxes' largest message; the
inline-send limit) is a property of the transport at one message size, not of one function.
Fitted one function at a time (``steps.fit_steps``), a large step (o_r, 6-7x at the eager
limit) is found every time, but a small one at the same size is not: g falls 2-11 % there on
this project's two-core machine (measured 2026-11-28: 1.55 us at 4032 B, 1.38 us at 4048 B),
which one function's criterion cannot tell from curvature, and on a grid of powers of two it
cancels against g's rise across the eager range (g is 1.29 us at 2048 B and 1.39 at 4096 B).

Here the breaks are chosen once for all the functions given (o_s, o_r, g and RTT/2): the cost
of a piece is the sum over the functions of its chi-square, each in units of that function's
measured errors widened by its own dispersion (``steps.dispersion`` of the function's own
richest fit, so that no function's curvature buys breaks for the others), and the number of
breaks is chosen with :data:`LOCATION` + 2F (F functions, two coefficients each) times ln n per
break, the single-function criterion's 7 ln n when F = 1. Every function then has a piece
boundary at every shared break, and whether it *steps* there is a separate, per-function
question: its jump (the new piece's value over the old piece's at the break, minus 1) with a
95 % interval from the two pieces' coefficient covariances (measured errors times the
dispersion; the delta method; the pieces' non-negativity constraints are ignored in the
interval). A function steps at a break when that interval excludes 0 (``StepFit.stepped``).

Pieces hold at least :data:`MIN_PIECE` sizes: with 2, a step between two sizes can be fitted
as a steep two-size piece instead of a break (seen on a 1.5x grid: a piece from 3072 to 4096
B). Pure: numpy arrays in, a frozen dataclass out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.pieces import partitions, piece_starts, piece_table
from ksptrace.studies.collectives.steps import EXACT, MIN_REL_ERROR, StepFit, dispersion

LOCATION = 5.0
"""ln n per break for choosing its location among the measured sizes (BIC's 1, plus the
search over every size that BIC does not price; ``steps.PENALTY`` is this + 2 for F = 1)."""
MIN_PIECE = 3
MAX_BREAKS = 8
"""Sizes per octave 4 from 1 B to 1 MiB (75 sizes) showed up to six switches on this machine
(304 B, 2.4 KiB, 4 KiB, ~23 KiB, ~300 KiB, ~880 KiB); two more are allowed."""
Z95 = 1.959963984540054


@dataclass(frozen=True)
class SharedSteps:
    """The shared breaks and each function's fit with a piece boundary at every one."""

    breakpoints: tuple[int, ...]
    fits: tuple[StepFit, ...]
    criterion: float
    dispersions: tuple[float, ...]
    """Each function's chi-square per degree of freedom (its own richest fit), >= 1 when its
    errors were measured."""


def _checked(sizes: np.ndarray, curves: Sequence[np.ndarray],
             rel_errors: Sequence[np.ndarray | None], min_piece: int
             ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    m = np.asarray(sizes, np.float64).ravel()
    if not curves or len(rel_errors) != len(curves):
        raise AnalysisError("a shared step fit needs one or more curves, one error array (or "
                            "None) each")
    if m.size < 2 * min_piece or np.unique(m).size != m.size:
        raise AnalysisError(f"a shared step fit needs at least {2 * min_piece} distinct sizes; "
                            f"got {m.size} sizes ({np.unique(m).size} distinct)")
    order = np.argsort(m)
    values, weights = [], []
    for t, rel in zip(curves, rel_errors, strict=True):
        t = np.asarray(t, np.float64).ravel()
        if t.shape != m.shape or not (np.isfinite(t).all() and (t > 0).all()):
            raise AnalysisError(f"each curve needs {m.size} positive finite values (times)")
        w = np.ones_like(t) if rel is None else 1 / np.maximum(
            np.asarray(rel, np.float64).ravel(), MIN_REL_ERROR)
        if w.shape != t.shape or not np.isfinite(w).all():
            raise AnalysisError("rel_errors needs one finite value per size")
        values.append(t[order])
        weights.append(w[order])
    return m[order], order, values, weights


def _variance(m: np.ndarray, t: np.ndarray, w: np.ndarray, origin: float, at: float,
              phi: float) -> float:
    """The variance of a piece's value at ``at`` (its unconstrained least-squares covariance,
    the residuals' scale being the measured errors times ``phi``)."""
    scale = float(m.max() - origin) or 1.0
    x = np.column_stack([w / t, w * ((m - origin) / scale) / t])
    g = np.array([1.0, (at - origin) / scale])
    return float(phi * g @ np.linalg.pinv(x.T @ x) @ g)


def _intervals(fit: StepFit, t: np.ndarray, w: np.ndarray, starts: list[int], phi: float
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Each break's jump's 95 % interval (delta method over the two pieces' values)."""
    m, n = fit.sizes, fit.sizes.size
    ends = [*starts[1:], n]
    low, high = [], []
    for k, jump in enumerate(fit.jumps()):
        i, j, e = starts[k], starts[k + 1], ends[k + 1]
        b = float(m[j])
        v0 = fit.intercepts[k] + fit.slopes[k] * b
        v1 = fit.intercepts[k + 1] + fit.slopes[k + 1] * b
        if v0 <= 0:  # from nothing to something: a step, whatever its size
            low.append(float("inf"))
            high.append(float("inf"))
            continue
        var0 = _variance(m[i:j], t[i:j], w[i:j], m[i] if i else 0.0, b, phi)
        var1 = _variance(m[j:e], t[j:e], w[j:e], b, b, phi)
        sd = float(np.sqrt(var1 / v0 ** 2 + v1 ** 2 * var0 / v0 ** 4))
        low.append(jump - Z95 * sd)
        high.append(jump + Z95 * sd)
    return tuple(low), tuple(high)


def fit_shared_steps(sizes: np.ndarray, curves: Sequence[np.ndarray],
                     rel_errors: Sequence[np.ndarray | None], max_breaks: int = MAX_BREAKS,
                     min_piece: int = MIN_PIECE) -> SharedSteps:
    """Breaks shared by ``curves`` (each a function of ``sizes``), their number chosen by the
    criterion; each curve's :class:`StepFit` at those breaks, with its jumps' intervals.

    ``rel_errors``: per curve, each value's measured relative standard error (None: every size
    weighs alike, and the curve's scale comes from its own richest fit's residuals)."""
    m, _, values, weights = _checked(sizes, curves, rel_errors, min_piece)
    n = m.size
    tables = [piece_table(m, t, w, min_piece) for t, w in zip(values, weights, strict=True)]
    phis = []
    for table, rel in zip(tables, rel_errors, strict=True):
        scores = [float(values[n]) for values, _ in partitions(table.rss, max_breaks)]
        phis.append(dispersion(scores, n) if rel is not None
                    else max(dispersion(scores, n, floor=0.0), EXACT))
    cost = sum(table.rss / phi for table, phi in zip(tables, phis, strict=True))
    best = partitions(np.asarray(cost), max_breaks)
    per_break = (LOCATION + 2 * len(curves)) * np.log(n)
    criteria = np.array([values[n] + per_break * k for k, (values, _) in enumerate(best)])
    k = int(np.argmin(criteria + 1e-9 * np.arange(criteria.size)))
    starts = piece_starts(best, k, n)
    ends = [*starts[1:], n]
    breaks = tuple(int(m[i]) for i in starts[1:])
    fits = []
    for table, t, w, phi in zip(tables, values, weights, phis, strict=True):
        pairs = list(zip(starts, ends, strict=True))
        bare = StepFit(breaks, tuple(float(table.intercept[p]) for p in pairs),
                       tuple(float(table.slope[p]) for p in pairs), m, t, np.empty(0),
                       float(criteria[k]))
        fit = replace(bare, predicted=bare(m))
        low, high = _intervals(fit, t, w, starts, phi)
        fits.append(replace(fit, jump_low=low, jump_high=high))
    return SharedSteps(breaks, tuple(fits), float(criteria[k]), tuple(phis))
