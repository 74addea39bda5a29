"""Piecewise-linear curves with steps, breakpoints chosen by the data (segmented regression).

PLogP's overheads and gap jump where the MPI library changes protocol (Open MPI's shared-memory
eager limit, 4 KiB by default, is a step of several microseconds in o_r between two sizes). A
continuous piecewise-linear fit cannot jump, so it spreads such a step over the neighbouring
pieces and misses it by half. Here each piece has its own intercept and slope,

    f(m) = a_k + b_k m   for breakpoint_k <= m < breakpoint_{k+1},

with a_k, b_k >= 0 (time does not fall as messages grow within a piece), fitted by relative
least squares (sizes span six decades), each size weighted by the inverse of its measured
relative standard error when given. A breakpoint is a measured size at which a new piece starts;
each piece holds at least ``min_piece`` sizes, so one noisy size cannot become a piece of its
own.

**How many breaks.** For every number of breaks k up to ``max_breaks`` the best locations are
found exactly (dynamic programming over the sorted sizes: the optimal partition into k + 1
contiguous pieces), and k is chosen by a Bayesian information criterion
``n ln(RSS / n) + (2 + PENALTY k) ln n`` whose price per break also covers the search over its
location (:data:`PENALTY`). The synthetic tests (``tests/studies/collectives/test_steps.py``)
recover known steps at 2 % and 10 % noise and add no break to a curve that has none. A step
must stand out of the noise over the sizes of its piece: at 10 % noise a 45 % step held by 3
sizes is missed in 39 of 40 draws (the fit takes it for a slope), which more repetitions per
size fix. Weights matter on real curves: with 2 % noise below 256 KiB and 50 % above (large
messages on a shared machine), the 4 KiB step is found in 40 of 40 draws weighted and 11 of 40
unweighted.

Pure: numpy arrays in, a frozen dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from ksptrace.errors import AnalysisError

PENALTY = 7.0
"""ln n per break in the criterion. Textbook BIC counts 3 (the break's location and the new
piece's two coefficients), but the location is the best of every measured size, which BIC does
not price: with 3, curves without a step got one in 10 of 40 draws at 2 % noise and 13 of 40 at
10 %; with 7 in 1 and 2 of 40, while a 2.8x step is still found in 40 and 39 of 40 (21 sizes,
1 B-1 MiB)."""
MIN_REL_ERROR = 0.01
"""Relative standard errors below this are taken as this (no size is trusted beyond 1 %)."""
EXACT = 1e-12
"""Floor of the mean squared relative residual (an exact fit is not infinitely good)."""


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
    """The BIC of the chosen number of breaks (lower is better)."""

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

    def jumps(self) -> tuple[float, ...]:
        """At each break, the new piece's value over the previous piece's, minus 1."""
        out = []
        for k, b in enumerate(self.breakpoints):
            before = self.intercepts[k] + self.slopes[k] * b
            after = self.intercepts[k + 1] + self.slopes[k + 1] * b
            out.append(after / before - 1 if before > 0 else float("inf"))
        return tuple(out)


def _piece(m: np.ndarray, t: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Intercept, slope (both >= 0) and weighted sum of squared relative residuals of one
    piece."""
    scale = float(m.max()) or 1.0
    columns = np.column_stack([w / t, w * (m / scale) / t])
    coef, _ = nnls(columns, w)
    rss = float(np.sum((columns @ coef - w) ** 2))
    return float(coef[0]), float(coef[1] / scale), rss


def fit_steps(sizes: np.ndarray, values: np.ndarray, max_breaks: int = 3,
              min_piece: int = 2, rel_errors: np.ndarray | None = None) -> StepFit:
    """The step-wise piecewise-linear fit with the number of breaks chosen by BIC.

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
    pieces = {(i, j): _piece(m[i:j], t[i:j], w[i:j]) for i in range(n)
              for j in range(i + min_piece, n + 1)}
    # best[k][j]: least RSS of m[:j] in k + 1 pieces, and where the last piece starts
    best: list[dict[int, tuple[float, int]]] = [
        {j: (pieces[0, j][2], 0) for j in range(min_piece, n + 1)}]
    for _ in range(max_breaks):
        prev = best[-1]
        best.append({j: min((prev[i][0] + pieces[i, j][2], i) for i in prev
                            if (i, j) in pieces)
                     for j in range(min_piece, n + 1)
                     if any((i, j) in pieces for i in prev)})
    chosen: tuple[float, int] | None = None
    for k, row in enumerate(best):
        if n not in row:
            break
        bic = n * np.log(max(row[n][0] / n, EXACT)) + (PENALTY * k + 2) * np.log(n)
        if chosen is None or bic < chosen[0] - 1e-9:
            chosen = (float(bic), k)
    assert chosen is not None
    criterion, k = chosen
    starts, j = [], n
    for level in range(k, -1, -1):
        i = best[level][j][1]
        starts.append(i)
        j = i
    starts.reverse()
    ends = [*starts[1:], n]
    coef = [pieces[i, e] for i, e in zip(starts, ends, strict=True)]
    fit = StepFit(tuple(int(m[i]) for i in starts[1:]), tuple(c[0] for c in coef),
                  tuple(c[1] for c in coef), m, t, np.empty(0), criterion)
    return StepFit(fit.breakpoints, fit.intercepts, fit.slopes, m, t, fit(m), criterion)


def synthetic_steps(sizes: np.ndarray, intercepts: tuple[float, ...],
                    slopes: tuple[float, ...], breakpoints: tuple[int, ...], noise: float,
                    rng: np.random.Generator) -> np.ndarray:
    """A step-wise curve at ``sizes`` with relative Gaussian noise (tests, docs, benchmarks)."""
    truth = StepFit(breakpoints, intercepts, slopes, np.empty(0), np.empty(0), np.empty(0), 0.0)
    clean = truth(np.asarray(sizes, np.float64))
    return np.asarray(clean * (1 + noise * rng.standard_normal(clean.shape)))
