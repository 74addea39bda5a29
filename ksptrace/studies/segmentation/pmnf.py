"""Single-parameter PMNF models, c0 + c1 * p^i * log2(p)^j, fitted to many series at once.

The hypothesis space is Extra-P's default single-parameter one: a constant model plus 42
compound terms (see ``TERMS``). Every hypothesis is a two-column least-squares problem whose
design depends only on the points ``p``, so one pseudo-inverse and one hat matrix per hypothesis
serve every series that shares those points. Leave-one-out predictions come from the hat matrix
(``y_i - e_i / (1 - h_ii)``) instead of refitting, and the winner is picked by the LOO SMAPE
(Extra-P's default) or the LOO RSS.

Pure numpy: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from ksptrace.errors import AnalysisError

Criterion = Literal["smape", "rss"]

F = Fraction
TERMS: tuple[tuple[Fraction, int], ...] = (
    (F(0), 1), (F(0), 2),
    (F(1, 4), 0), (F(1, 3), 0), (F(1, 4), 1), (F(1, 3), 1), (F(1, 4), 2), (F(1, 3), 2),
    (F(1, 2), 0), (F(1, 2), 1), (F(1, 2), 2),
    (F(2, 3), 0), (F(3, 4), 0), (F(2, 3), 1), (F(3, 4), 1), (F(4, 5), 0),
    (F(2, 3), 2), (F(3, 4), 2),
    (F(1), 0), (F(1), 1), (F(1), 2),
    (F(5, 4), 0), (F(5, 4), 1), (F(4, 3), 0), (F(4, 3), 1),
    (F(3, 2), 0), (F(3, 2), 1), (F(3, 2), 2),
    (F(5, 3), 0), (F(7, 4), 0),
    (F(2), 0), (F(2), 1), (F(2), 2),
    (F(9, 4), 0), (F(7, 3), 0),
    (F(5, 2), 0), (F(5, 2), 1), (F(5, 2), 2),
    (F(8, 3), 0), (F(11, 4), 0),
    (F(3), 0), (F(3), 1),
)  # fmt: skip
"""Extra-P's default (i, j) pairs, in its order. Every i in {1/4 .. 3} appears with j = 0;
j = 1 and j = 2 are combined only with some i (none with 4/5, 5/3, 7/4, 9/4, 7/3, 8/3, 11/4;
j = 2 also not with 5/4, 4/3, 3); (0, 1) and (0, 2) are the pure logarithms."""

CONSTANT = -1
"""``term`` index of the constant model c0."""

TERM_CONTRIBUTION_MIN = 5e-4
"""A term whose largest share |c1 t(p) / y| stays below this is rejected (Extra-P's epsilon)."""


CLEAN_CONSTANT = 1e-3
"""A fitted c0 smaller than this share of min |y| is printed and stored as 0 (Extra-P's rule)."""


def term_values(p: np.ndarray, i: float, j: float) -> np.ndarray:
    """p^i * log2(p)^j, elementwise."""
    p = np.asarray(p, dtype=np.float64)
    out = np.power(p, i) if i != 0 else np.ones_like(p)
    if j != 0:
        out = out * np.power(np.log2(p), j)
    return out


def format_term(i: float | Fraction, j: float) -> str:
    """A term in Extra-P's notation, e.g. ``p^(1/2) * log2(p)^(1)``."""
    parts = []
    if i != 0:
        parts.append(f"p^({_fmt_exponent(i)})")
    if j != 0:
        parts.append(f"log2(p)^({_fmt_exponent(j)})")
    return " * ".join(parts) if parts else "1"


def _fmt_exponent(x: float | Fraction) -> str:
    if isinstance(x, Fraction):
        return str(x)
    frac = Fraction(x).limit_denominator(12)
    return str(frac) if abs(float(frac) - x) < 1e-9 else f"{x:.3g}"


@dataclass(frozen=True)
class PMNFModel:
    """One fitted model c0 + c1 * p^i * log2(p)^j (``term == CONSTANT`` means c0 alone)."""

    c0: float
    c1: float
    term: int
    i: float
    j: float

    def __call__(self, p: np.ndarray | float) -> np.ndarray:
        p = np.asarray(p, dtype=np.float64)
        if self.term == CONSTANT:
            return np.full_like(p, self.c0)
        return self.c0 + self.c1 * term_values(p, self.i, self.j)

    @property
    def exponents(self) -> tuple[Fraction, int] | None:
        """The (i, j) pair from ``TERMS``, or None for the constant model."""
        return None if self.term == CONSTANT else TERMS[self.term]

    def __str__(self) -> str:
        """Extra-P notation, e.g. ``30 + 1 * p^(1)``."""
        if self.term == CONSTANT:
            return f"{self.c0:.4g}"
        i, j = TERMS[self.term]
        sign = "-" if self.c1 < 0 else "+"
        return f"{self.c0:.4g} {sign} {abs(self.c1):.4g} * {format_term(i, j)}"


@dataclass(frozen=True)
class PMNFFits:
    """The winning model of each of S series fitted over the same points ``p``."""

    p: np.ndarray
    """float64 [n], the points."""
    term: np.ndarray
    """int64 [S], index into ``TERMS``, or ``CONSTANT``."""
    c0: np.ndarray
    """float64 [S]"""
    c1: np.ndarray
    """float64 [S] (0 for the constant model)"""
    cv_cost: np.ndarray
    """float64 [S], the winner's leave-one-out cost (SMAPE in % or RSS)."""
    rss: np.ndarray
    """float64 [S], the winner's in-sample residual sum of squares."""
    nrss: np.ndarray
    """float64 [S], sqrt(rss) / |mean(y)| (0 for an exact fit of all-zero data)."""
    smape: np.ndarray
    """float64 [S], the winner's in-sample SMAPE in %."""

    def __len__(self) -> int:
        return int(self.term.shape[0])

    def model(self, s: int = 0) -> PMNFModel:
        t = int(self.term[s])
        i, j = (0.0, 0.0) if t == CONSTANT else (float(TERMS[t][0]), float(TERMS[t][1]))
        return PMNFModel(c0=float(self.c0[s]), c1=float(self.c1[s]), term=t, i=i, j=j)

    def predict(self, p: np.ndarray) -> np.ndarray:
        """float64 [S, len(p)], every series' model evaluated at ``p``."""
        p = np.asarray(p, dtype=np.float64)
        basis = _basis(p, allow_log=True)  # [H, m]
        safe = np.where(self.term == CONSTANT, 0, self.term)
        t = basis[safe] * (self.term != CONSTANT)[:, None]
        return self.c0[:, None] + self.c1[:, None] * t


def _basis(p: np.ndarray, allow_log: bool) -> np.ndarray:
    """float64 [42, n]: every term of ``TERMS`` at ``p`` (NaN rows for log terms if not allowed)."""
    rows = np.empty((len(TERMS), p.shape[0]))
    for h, (i, j) in enumerate(TERMS):
        rows[h] = term_values(p, float(i), float(j)) if (allow_log or j == 0) else np.nan
    return rows


@dataclass(frozen=True)
class _Design:
    """Everything about the hypotheses that depends on p only. Index 0 is the constant model."""

    pinv: np.ndarray  # [H+1, 2, n]: coefficients = pinv @ y
    hat: np.ndarray  # [H+1, n, n]
    loo_scale: np.ndarray  # [H+1, n]: 1 / (1 - h_ii), NaN where a point has leverage 1
    basis: np.ndarray  # [H+1, n]: the term column (zeros for the constant)
    valid: np.ndarray  # [H+1] bool


_DESIGN_CACHE: dict[bytes, _Design] = {}


def _design(p: np.ndarray) -> _Design:
    key = p.tobytes()
    cached = _DESIGN_CACHE.get(key)
    if cached is not None:
        return cached
    n = p.shape[0]
    allow_log = bool(np.all(p >= 1.0))
    basis = np.vstack([np.zeros((1, n)), _basis(p, allow_log)])  # [H+1, n]
    valid = np.all(np.isfinite(basis), axis=1)
    basis = np.where(np.isfinite(basis), basis, 0.0)
    scale = np.max(np.abs(basis), axis=1)
    scale[scale == 0] = 1.0
    x = np.stack([np.ones_like(basis), basis / scale[:, None]], axis=2)  # [H+1, n, 2]
    pinv_x = np.linalg.pinv(x)  # [H+1, 2, n]
    hat = np.einsum("hnk,hkm->hnm", x, pinv_x)
    pinv = pinv_x.copy()
    pinv[:, 1, :] /= scale[:, None]
    lev = np.einsum("hnn->hn", hat)
    with np.errstate(divide="ignore"):
        loo_scale = np.where(lev < 1.0 - 1e-9, 1.0 / (1.0 - lev), np.nan)
    # A term that is constant over p duplicates c0: it cannot be fitted separately.
    flat = np.ptp(basis, axis=1) <= 1e-12 * np.maximum(np.max(np.abs(basis), axis=1), 1e-300)
    valid[1:] &= ~flat[1:]
    valid &= np.all(np.isfinite(loo_scale), axis=1) | (np.arange(valid.size) == 0)
    design = _Design(pinv=pinv, hat=hat, loo_scale=loo_scale, basis=basis, valid=valid)
    if len(_DESIGN_CACHE) > 4096:
        _DESIGN_CACHE.clear()
    _DESIGN_CACHE[key] = design
    return design


def _smape(pred: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """Mean over the last axis of 2|pred - actual| / (|pred| + |actual|), in %; 0/0 counts 0."""
    num = 2.0 * np.abs(pred - actual)
    den = np.abs(pred) + np.abs(actual)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(den > 0, num / den, 0.0)
    return 100.0 * ratio.mean(axis=-1)


def fit_many(
    p: Sequence[float] | np.ndarray, y: np.ndarray, criterion: Criterion = "smape"
) -> PMNFFits:
    """Fit every hypothesis to every row of ``y`` [S, n] (or one series [n]) over the points ``p``.

    ``p`` must be distinct and positive (use ``aggregate`` first for repetitions); at least three
    points are needed for a leave-one-out choice between two-coefficient models.
    """
    pts = np.asarray(p, dtype=np.float64)
    ys = np.atleast_2d(np.asarray(y, dtype=np.float64))
    if criterion not in ("smape", "rss"):
        raise AnalysisError(f"unknown selection criterion {criterion!r}; use 'smape' or 'rss'")
    if pts.ndim != 1 or ys.shape[-1] != pts.shape[0]:
        raise AnalysisError(
            f"y has shape {ys.shape} but p has {pts.shape[0]} points; give y as [S, n]"
        )
    if pts.shape[0] < 3:
        raise AnalysisError(
            f"a PMNF model needs at least 3 points, got {pts.shape[0]}; measure more p"
        )
    if np.any(pts <= 0) or np.unique(pts).size != pts.size or not np.all(np.isfinite(pts)):
        raise AnalysisError("p must be finite, positive and distinct; aggregate repetitions first")
    if not np.all(np.isfinite(ys)):
        raise AnalysisError("y contains NaN or infinite values; drop or repair those measurements")
    d = _design(pts)
    coef = np.einsum("hkn,sn->shk", d.pinv, ys)  # [S, H+1, 2]
    fitted = np.einsum("hmn,sn->shm", d.hat, ys)  # [S, H+1, n]
    resid = ys[:, None, :] - fitted
    loo_resid = resid * d.loo_scale[None]  # y_i - yhat_(-i)
    if criterion == "smape":
        cost = _smape(ys[:, None, :] - loo_resid, ys[:, None, :])
    else:
        cost = np.sum(loo_resid**2, axis=2)
    cost = np.where(d.valid[None, :], cost, np.inf)
    # Extra-P's contribution test: a term that never carries more than a tiny share of y is noise.
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.abs(coef[:, 1:, 1:2] * d.basis[None, 1:, :] / ys[:, None, :])
    share = np.where(np.isfinite(share), share, 0.0).max(axis=2)
    weak = (coef[:, 1:, 1] == 0) | (share < TERM_CONTRIBUTION_MIN)
    cost[:, 1:] = np.where(weak, np.inf, cost[:, 1:])
    cost = np.where(np.isnan(cost), np.inf, cost)
    best = np.argmin(cost, axis=1)  # first minimum: the constant wins ties, then Extra-P's order
    rows = np.arange(ys.shape[0])
    rss = np.sum(resid[rows, best] ** 2, axis=1)
    mean = np.abs(ys.mean(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        nrss = np.where(mean > 0, np.sqrt(rss) / mean, np.where(rss > 0, np.inf, 0.0))
    c0 = coef[rows, best, 0]
    # Like Extra-P, a constant coefficient that is round-off next to the data is set to 0.
    tiny = np.abs(c0) < CLEAN_CONSTANT * np.min(np.abs(ys), axis=1)
    c0 = np.where(tiny & (best > 0), 0.0, c0)
    return PMNFFits(
        p=pts,
        term=(best - 1).astype(np.int64),
        c0=c0,
        c1=coef[rows, best, 1],
        cv_cost=cost[rows, best],
        rss=rss,
        nrss=nrss,
        smape=_smape(fitted[rows, best], ys),
    )


def loo_residuals(fits: PMNFFits, y: np.ndarray) -> np.ndarray:
    """float64 [S, n]: y_i minus each series' winning model refitted without point i.

    ``y`` must be the data ``fits`` came from; like ``fit_many``, this uses the hat matrix.
    """
    ys = np.atleast_2d(np.asarray(y, dtype=np.float64))
    d = _design(fits.p)
    h = fits.term + 1  # row 0 of the design is the constant model
    fitted = np.einsum("smn,sn->sm", d.hat[h], ys)
    return (ys - fitted) * d.loo_scale[h]


def fit(
    p: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, criterion: Criterion = "smape"
) -> PMNFModel:
    """The best model of one series; repeated p are first reduced to their median."""
    pts, vals = aggregate(p, y)
    return fit_many(pts, vals[None, :], criterion).model(0)


def aggregate(
    p: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    how: Literal["median", "mean", "min"] = "median",
) -> tuple[np.ndarray, np.ndarray]:
    """Sort by p and reduce repetitions (equal p) to one value each; NaN values are dropped.

    Returns (unique p [m], value [m]). Non-positive p are kept; ``fit_many`` rejects them.
    """
    pts = np.asarray(p, dtype=np.float64).ravel()
    vals = np.asarray(y, dtype=np.float64).ravel()
    if pts.shape != vals.shape:
        raise AnalysisError(f"{pts.size} values of p but {vals.size} measurements; pair them up")
    keep = np.isfinite(pts) & np.isfinite(vals)
    pts, vals = pts[keep], vals[keep]
    uniq, inverse = np.unique(pts, return_inverse=True)
    reducers: dict[str, Callable[[np.ndarray], float]] = {
        "median": lambda v: float(np.median(v)),
        "mean": lambda v: float(np.mean(v)),
        "min": lambda v: float(np.min(v)),
    }
    if how not in reducers:
        raise AnalysisError(f"unknown repetition reduction {how!r}; use median, mean or min")
    reduce = reducers[how]
    out = np.array([reduce(vals[inverse == k]) for k in range(uniq.size)], dtype=np.float64)
    return uniq, out
