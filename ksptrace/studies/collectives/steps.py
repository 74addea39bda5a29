"""Piecewise-linear curves with steps, breakpoints chosen by the data (segmented regression).

PLogP's overheads and gap jump where the MPI library changes protocol (Open MPI's shared-memory
eager limit, 4 KiB by default, is a step of several microseconds in o_r between two sizes). A
continuous piecewise-linear fit cannot jump, so it spreads such a step over the neighbouring
pieces and misses it by half. Here each piece has its own intercept and slope,

    f(m) = a_k + b_k m   for breakpoint_k <= m < breakpoint_{k+1},

with b_k >= 0 (time does not fall as messages grow within a piece) and the piece's value at
its first size >= 0 (a_k >= 0 for the first piece: the value towards m = 0; a later piece may
rise faster than in proportion to m, as the largest messages do when they leave the cache, and
its a_k is then negative), fitted by relative
least squares (sizes span six decades), each size weighted by the inverse of its measured
relative standard error when given. A breakpoint is a measured size at which a new piece starts;
each piece holds at least ``min_piece`` sizes, so one noisy size cannot become a piece of its
own.

**How many breaks.** For every number of breaks k up to ``max_breaks`` the best locations are
found exactly (dynamic programming over the sorted sizes, which are spaced evenly in log m: the
optimal partition into k + 1 contiguous pieces), and k is chosen by an information criterion
with :data:`PENALTY` ln n per break (the textbook 3 does not price the search over locations).

- With each size's relative standard error measured (``rel_errors``: the width of its median's
  confidence interval, ``persize.py``), the fit of k breaks scores ``chi2_k / phi``: squared
  residuals in units of those errors, so that a break must lower chi-square by 7 ln 21 = 21
  (a step of about 4.6 standard errors at one size, or less spread over several): a step is
  kept only when it stands out of the per-size intervals. ``phi`` (:func:`dispersion`) is the
  chi-square per degree of freedom of the richest fit, at least 1: where the residuals exceed
  the intervals (a curve not exactly linear between breaks, drift within a run), every
  interval widens alike. Stated 2 % on a flat curve with 10 % scatter, no break was added in
  35 of 40 draws with it and in 0 of 40 without.
- Without them, the scale comes from each fit's residuals: ``n ln(RSS_k / n)``.

Synthetic curves (21 sizes, 1 B-1 MiB, 40 draws, ``tests/studies/collectives/test_steps.py``),
errors as measured: a 2.8x step at 4 KiB found in 40 of 40 at 2 % noise and 39 at 10 %; beside
it a 45 % step at 512 B in 40 of 40 at 2 % and 0 at 10 % (3 sizes cannot tell it from a slope
there); a gap-like kink at 4 KiB (no rise, a slope change) in 38 of 40 at 2 %, 2 at 10 %; a
flat curve keeps no break in 40 and 39 of 40. At 10 % the fit leaves out what it cannot tell
rather than guessing; a step must be measured to a few per cent per size to be found. Weights
matter on real curves: with 2 % noise below 256 KiB and 50 % above (large messages on a shared
machine), the 4 KiB step is found weighted and mostly missed unweighted.

Pure: numpy arrays in, a frozen dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.pieces import partitions, piece_starts, piece_table

MAX_BREAKS = 5
"""The most breaks a fit considers (21 sizes from 1 B to 1 MiB leave room for 5 with pieces of
2 sizes or more)."""
PENALTY = 7.0
"""ln n per break in the criterion. Textbook BIC counts 3 (the break's location and the new
piece's two coefficients), but the location is the best of every measured size, which BIC does
not price: with 3 (unweighted), curves without a step got one in 10 of 40 draws at 2 % noise
and 13 of 40 at 10 %; with 7 in 1 and 2 of 40, while a 2.8x step is still found in 40 and 39 of
40 (21 sizes, 1 B-1 MiB). Weighted by measured errors, 5, 6 and 7 found the synthetic curves'
breaks equally often (within 1 of 40 draws); 7 is kept, for both."""
MIN_REL_ERROR = 0.01
"""Relative standard errors below this are taken as this (no size is trusted beyond 1 %)."""
EXACT = 1e-12
"""Floor of the mean squared relative residual (an exact fit is not infinitely good)."""
MIN_DOF = 4
"""Degrees of freedom the fit that sets the residual scale must leave."""


@dataclass(frozen=True)
class StepFit:
    """A piecewise-linear function of the message size with a step allowed at each break."""

    breakpoints: tuple[int, ...]
    """Sizes (bytes) at which a new piece starts."""
    intercepts: tuple[float, ...]
    slopes: tuple[float, ...]
    sizes: np.ndarray
    values: np.ndarray
    predicted: np.ndarray
    criterion: float
    """The information criterion of the chosen number of breaks (lower is better)."""
    jump_low: tuple[float, ...] = ()
    jump_high: tuple[float, ...] = ()
    """Each jump's 95 % interval, where known (``shared_steps.py``; empty otherwise)."""

    def __call__(self, sizes: np.ndarray) -> np.ndarray:
        m = np.asarray(sizes, np.float64)
        piece = np.searchsorted(np.asarray(self.breakpoints, np.float64), m, side="right")
        return np.asarray(np.asarray(self.intercepts)[piece] + np.asarray(self.slopes)[piece] * m)

    @property
    def rms_rel(self) -> float:
        return float(np.sqrt(np.mean(((self.predicted - self.values) / self.values) ** 2)))

    @property
    def intercept(self) -> float:
        """The first piece's intercept (the function's value towards m = 0)."""
        return self.intercepts[0]

    def stepped(self) -> tuple[bool, ...]:
        """At each break, whether the function steps there: its jump's 95 % interval excludes
        0 (every break counts as a step when no interval is known)."""
        if len(self.jump_low) != len(self.breakpoints):
            return (True,) * len(self.breakpoints)
        return tuple(bool(lo > 0 or hi < 0) for lo, hi in zip(self.jump_low, self.jump_high,
                                                               strict=True))

    def jumps(self) -> tuple[float, ...]:
        """At each break, the new piece's value over the previous piece's, minus 1."""
        out = []
        for k, b in enumerate(self.breakpoints):
            before = self.intercepts[k] + self.slopes[k] * b
            after = self.intercepts[k + 1] + self.slopes[k + 1] * b
            out.append(after / before - 1 if before > 0 else float("inf"))
        return tuple(out)


def dispersion(chi2: list[float], n: int, floor: float = 1.0) -> float:
    """How much the residuals exceed the measured errors: chi-square per degree of freedom of
    the richest fit that leaves :data:`MIN_DOF` of them (3 parameters a break, 2 for the first
    piece), at least 1. Residuals larger than the per-size intervals say (a curve not exactly
    linear between breaks, drift within the run) widen every interval alike, so that they do
    not buy breaks; smaller ones do not narrow them (``floor`` 0: no errors were measured, and
    this is the residuals' own scale)."""
    usable = [(c, n - 3 * k - 2) for k, c in enumerate(chi2) if n - 3 * k - 2 >= MIN_DOF]
    c, dof = usable[-1] if usable else (chi2[0], max(n - 2, 1))
    return max(c / dof, floor)


def fit_steps(sizes: np.ndarray, values: np.ndarray, max_breaks: int = MAX_BREAKS,
              min_piece: int = 2, rel_errors: np.ndarray | None = None) -> StepFit:
    """The step-wise piecewise-linear fit with the number of breaks chosen by the criterion.

    ``rel_errors``: each value's relative standard error (measured: the spread of its
    repetitions); sizes are then weighted by its inverse, so that a few sizes measured badly
    (large messages on a shared machine) do not hide a step that precise sizes show. Without
    it every size weighs alike."""
    m = np.asarray(sizes, np.float64).ravel()
    t = np.asarray(values, np.float64).ravel()
    w = np.ones_like(t) if rel_errors is None else 1 / np.maximum(
        np.asarray(rel_errors, np.float64).ravel(), MIN_REL_ERROR)
    if m.shape != t.shape or m.size < 2 * min_piece - 1 or np.unique(m).size != m.size:
        raise AnalysisError(f"a step fit needs distinct sizes, one value each, at least "
                            f"{max(2 * min_piece - 1, 2)}; got {m.size} sizes, {t.size} values")
    if not (np.isfinite(t).all() and (t > 0).all()):
        raise AnalysisError("a step fit needs positive finite values (times)")
    if w.shape != t.shape or not np.isfinite(w).all():
        raise AnalysisError("rel_errors needs one finite value per size")
    order = np.argsort(m)
    m, t, w = m[order], t[order], w[order]
    n = m.size
    pieces = piece_table(m, t, w, min_piece)
    best = partitions(pieces.rss, max_breaks)
    scores = [float(values[n]) for values, _ in best]
    if rel_errors is None:  # the scale from each fit's own residuals (profile likelihood)
        fits = [n * np.log(max(score / n, EXACT)) for score in scores]
    else:  # the scale measured per size, widened by the residuals where they exceed it
        phi = dispersion(scores, n)
        fits = [score / phi for score in scores]
    criteria = [f + PENALTY * k * np.log(n) for k, f in enumerate(fits)]
    k = int(np.argmin(np.asarray(criteria) + 1e-9 * np.arange(len(criteria))))
    criterion = float(criteria[k])
    starts = piece_starts(best, k, n)
    ends = [*starts[1:], n]
    fit = StepFit(tuple(int(m[i]) for i in starts[1:]),
                  tuple(float(pieces.intercept[i, e]) for i, e in zip(starts, ends, strict=True)),
                  tuple(float(pieces.slope[i, e]) for i, e in zip(starts, ends, strict=True)),
                  m, t, np.empty(0), criterion)
    return StepFit(fit.breakpoints, fit.intercepts, fit.slopes, m, t, fit(m), criterion)


def synthetic_steps(sizes: np.ndarray, intercepts: tuple[float, ...],
                    slopes: tuple[float, ...], breakpoints: tuple[int, ...], noise: float,
                    rng: np.random.Generator) -> np.ndarray:
    """A step-wise curve at ``sizes`` with relative Gaussian noise (tests, docs, benchmarks)."""
    truth = StepFit(breakpoints, intercepts, slopes, np.empty(0), np.empty(0), np.empty(0), 0.0)
    clean = truth(np.asarray(sizes, np.float64))
    return np.asarray(clean * (1 + noise * rng.standard_normal(clean.shape)))
