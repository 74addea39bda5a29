"""Bulk distribution fitting: maximum-likelihood fits of candidate families, ranked.

Each candidate is fitted by scipy's maximum likelihood on the data standardised by its median
and interquartile range (iteration times of 1e-4 s otherwise push the optimiser into degenerate
corners), and its location and scale are mapped back to seconds. Candidates are ranked by the
sum of squared errors between the histogram density of all the data and the fitted pdf at the
bin centres; the KS distance and the AIC are reported alongside. Very large traces can be fitted
on a seeded random subsample; the histogram always uses all the data.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy
import scipy.stats as st
from scipy.stats._distn_infrastructure import rv_continuous_frozen

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability import neldermead
from ksptrace.studies.variability.choices import DEFAULT_CANDIDATES
from ksptrace.studies.variability.fastnll import CHECKED_SCIPY, objective
from ksptrace.studies.variability.inplace import kernel
from ksptrace.studies.variability.models import mean_of
from ksptrace.studies.variability.startmoments import remembered_moments

DEFAULT_BINS = 200

SLOW_FAMILY_CAP: dict[str, int] = {"nct": 600}
"""Families whose scipy pdf is about a hundred times slower than the others are fitted on a
seeded subsample of at most this many values (the effect is measured by subsampling_effect)."""
MIN_SAMPLES = 8
"""Fewer values than this cannot constrain a four-parameter family."""


def distribution(name: str) -> Any:
    """The scipy.stats continuous family called ``name``; an unknown name lists valid ones."""
    dist = getattr(st, name, None)
    if not isinstance(dist, st.rv_continuous):
        valid = ", ".join(DEFAULT_CANDIDATES)
        raise AnalysisError(
            f"unknown distribution {name!r}; use a scipy.stats continuous family such as {valid}"
        )
    return dist


@functools.lru_cache(maxsize=64)
def frozen_distribution(name: str, params: tuple[float, ...]) -> Any:
    """``distribution(name)(*params)``, made once (an analysis asks for the same fits'
    distributions about 40 times per trace) and cheaply (:func:`_freeze`)."""
    return _freeze(distribution(name), params)


def _freeze(dist: Any, params: tuple[float, ...]) -> Any:
    """``dist(*params)``, its methods called on ``dist`` itself. scipy's frozen distribution
    makes a new instance of the family's class for itself (its argument parser by ``exec``,
    its docstring by formatting: 0.3 ms, 0.08 s of a demo analysis) and calls the same methods
    on it with the same arguments, so the numbers are the same (test_frozen.py). Its random
    state is the family's, the global one either way; ksptrace never sets it."""
    if not scipy.__version__.startswith(CHECKED_SCIPY):
        return dist(*params)
    frozen = object.__new__(rv_continuous_frozen)
    frozen.args, frozen.kwds, frozen.dist = params, {}, dist
    shapes, _, _ = dist._parse_args(*params)
    frozen.a, frozen.b = dist._get_support(*shapes)
    return frozen


@dataclass(frozen=True)
class Fit:
    """One fitted family. ``params`` are scipy's (shapes..., loc, scale), in seconds."""

    name: str
    params: tuple[float, ...]
    loglik: float
    """Log-likelihood of the fitted sample."""
    aic: float
    sse: float
    """Sum over histogram bins of (histogram density - pdf)^2."""
    ks: float
    """KS distance between the scored sample and the fitted cdf."""
    n_fit: int
    """Values the parameters were fitted on."""
    n_scored: int | None = None
    """Values the log-likelihood, AIC and KS distance were evaluated on (None: the fitted ones).
    fit_candidates scores every family on the same sample, so their AIC compare like for like."""
    converged: bool | None = None
    """False when scipy's Nelder-Mead stopped at its iteration or evaluation limit (200 per
    parameter) rather than at its tolerance: the parameters are then where it stopped, not
    the maximum of the likelihood; None for a closed-form fit (norm)."""

    @property
    def scored_on(self) -> int:
        return self.n_fit if self.n_scored is None else self.n_scored

    def frozen(self) -> Any:
        """The fitted scipy frozen distribution (one object per family and parameters)."""
        return frozen_distribution(self.name, self.params)

    @property
    def mean(self) -> float:
        return mean_of(self.frozen())

    @property
    def std(self) -> float:
        return float(self.frozen().std())


@dataclass(frozen=True)
class Histogram:
    """Density histogram of all the data over a central range (outliers counted in the total)."""

    edges: np.ndarray
    density: np.ndarray

    @property
    def centres(self) -> np.ndarray:
        return 0.5 * (self.edges[1:] + self.edges[:-1])


@dataclass(frozen=True)
class FitRanking:
    """Fits ranked best first by SSE, the families that failed, and what was fitted."""

    fits: tuple[Fit, ...]
    failed: tuple[tuple[str, str], ...]
    """(family, reason) of each candidate whose fit failed."""
    histogram: Histogram
    n_total: int
    n_fit: int

    @property
    def best(self) -> Fit:
        if not self.fits:
            reasons = "; ".join(f"{n}: {r}" for n, r in self.failed)
            raise AnalysisError(f"no candidate distribution could be fitted ({reasons})")
        return self.fits[0]

    def get(self, name: str) -> Fit | None:
        """The fit of family ``name``, or None if it was not a candidate or failed."""
        return next((f for f in self.fits if f.name == name), None)


def subsample(x: np.ndarray, size: int | None, seed: int = 0) -> np.ndarray:
    """A seeded random subsample of ``size`` values (all of ``x`` if size is None or larger)."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    if size is None or size >= flat.size:
        return flat
    if size < MIN_SAMPLES:
        raise AnalysisError(f"a subsample of {size} values is too small; use >= {MIN_SAMPLES}")
    rng = np.random.default_rng(seed)
    return flat[rng.choice(flat.size, size=size, replace=False)]


def histogram(
    x: np.ndarray, bins: int = DEFAULT_BINS, range_: tuple[float, float] | None = None
) -> Histogram:
    """Density histogram of ``x`` normalised by the count of all values, in or out of range."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    if range_ is None:
        range_ = (float(flat.min()), float(flat.max()))
    lo, hi = range_
    if not hi > lo:
        hi = lo + max(abs(lo), 1.0) * 1e-9
    counts, edges = np.histogram(flat, bins=bins, range=(lo, hi))
    density = counts / (flat.size * np.diff(edges))
    return Histogram(edges=edges, density=density)


def ks_distance(x: np.ndarray, cdf: Any, ordered: np.ndarray | None = None) -> float:
    """The one-sample KS statistic of ``x`` against ``cdf``: ``scipy.stats.kstest(x,
    cdf).statistic``, the same operations, without the exact p-value scipy also computes
    (5 ms for 2,000 values, unused here). ``ordered``: ``np.sort(x)``, if already made."""
    n = len(x)
    cdfvals = cdf(np.sort(x) if ordered is None else ordered)
    above = (np.arange(1.0, n + 1) / n - cdfvals).max()
    below = (cdfvals - np.arange(0.0, n) / n).max()
    return float(above if above > below else below)


def checked(x: np.ndarray) -> np.ndarray:
    """``x`` as a flat float64 array; AnalysisError if too short or not finite."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    if flat.size < MIN_SAMPLES:
        raise AnalysisError(
            f"{flat.size} values cannot be fitted; a distribution fit needs >= {MIN_SAMPLES}"
        )
    if not np.isfinite(flat).all():
        raise AnalysisError("the data hold NaN or inf; drop the bad trace before fitting")
    return flat


def _standardiser(sample: np.ndarray) -> tuple[float, float]:
    q25, q50, q75 = np.quantile(sample, [0.25, 0.5, 0.75])
    spread = float(q75 - q25) or float(sample.std())
    if sample.max() == sample.min() or spread <= 0:
        raise AnalysisError("all values are equal; a constant sample has no distribution to fit")
    return float(q50), spread


class _Watched:
    """scipy's default optimizer (``optimize.fmin`` with the arguments ``rv_continuous.fit``
    passes), remembering whether it stopped at a limit: the same numbers. The objective is
    scipy's, or its bit-identical faster twin from fastnll.py; the optimizer is scipy's, or,
    with the scipy release the twins follow, its bit-identical twin from neldermead.py, which
    evaluates the twin on Python floats (inplace.py) where it can."""

    def __init__(self, dist: Any = None) -> None:
        self.converged: bool | None = None
        self.dist = dist

    def __call__(self, func: Any, x0: Any, args: tuple[Any, ...] = (), disp: int = 0) -> Any:
        from scipy import optimize

        floats = None
        if self.dist is not None and len(args) == 1:
            scipys, func = func, objective(self.dist, func, x0, args[0])
            if func is not scipys:
                floats = kernel(self.dist.name, func, x0, args[0])
        if disp == 0 and scipy.__version__.startswith(CHECKED_SCIPY):
            xopt, warnflag = neldermead.fmin(func, x0, args, floats)
        else:
            xopt, _fopt, _its, _calls, warnflag = optimize.fmin(func, x0, args=args, disp=disp,
                                                                 full_output=True)
        self.converged = warnflag == 0
        return xopt


@dataclass(frozen=True, eq=False)
class Prepared:
    """What every family's fit of one sample computes first: the checked values, their
    centre and spread, the standardised values and the sorted values (for the KS distance).
    Made once per sample by :func:`prepare` when several families are fitted to it."""

    x: np.ndarray
    centre: float
    spread: float
    z: np.ndarray
    ordered: np.ndarray


def prepare(sample: np.ndarray) -> Prepared:
    x = checked(sample)
    centre, spread = _standardiser(x)
    return Prepared(x, centre, spread, (x - centre) / spread, np.sort(x))


def fit_one(name: str, sample: np.ndarray | Prepared, hist: Histogram) -> Fit:
    """Maximum-likelihood fit of family ``name`` to ``sample`` (or to a sample already
    :func:`prepare`-d), scored against ``hist``."""
    dist = distribution(name)
    prep = sample if isinstance(sample, Prepared) else prepare(sample)
    x, centre, spread, z = prep.x, prep.centre, prep.spread, prep.z
    watched = _Watched(dist)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        with remembered_moments(dist):
            pz = tuple(float(v) for v in dist.fit(z, optimizer=watched))
        loglik_z = float(np.sum(dist.logpdf(z, *pz)))
        params = (*pz[:-2], centre + spread * pz[-2], spread * pz[-1])
        frozen = frozen_distribution(name, params)
        pdf = frozen.pdf(hist.centres)
        ks = ks_distance(x, frozen.cdf, prep.ordered)
    loglik = loglik_z - x.size * np.log(spread)
    if not np.isfinite(loglik) or not np.isfinite(pdf).all():
        raise AnalysisError(f"the {name} fit did not converge (non-finite likelihood)")
    sse = float(np.sum((hist.density - pdf) ** 2))
    return Fit(
        name=name,
        params=params,
        loglik=float(loglik),
        aic=float(2 * len(params) - 2 * loglik),
        sse=sse,
        ks=ks,
        n_fit=int(x.size),
        converged=watched.converged,
    )


def rescore(fit: Fit, x: np.ndarray) -> Fit:
    """``fit`` with its log-likelihood, AIC and KS distance evaluated on ``x`` instead."""
    flat = checked(x)
    frozen = fit.frozen()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        loglik = float(np.sum(frozen.logpdf(flat)))
        ks = ks_distance(flat, frozen.cdf)
    if not np.isfinite(loglik):
        raise AnalysisError(
            f"the {fit.name} fit gives zero density to some of the {flat.size} values it is "
            "scored on (non-finite likelihood)"
        )
    return replace(
        fit,
        loglik=loglik,
        aic=float(2 * len(fit.params) - 2 * loglik),
        ks=ks,
        n_scored=int(flat.size),
    )


def fit_candidates(
    x: np.ndarray,
    candidates: Sequence[str] = DEFAULT_CANDIDATES,
    bins: int = DEFAULT_BINS,
    fit_size: int | None = None,
    seed: int = 0,
) -> FitRanking:
    """Fit every candidate family to ``x`` and rank the fits by histogram SSE (best first).

    ``fit_size`` fits on a seeded random subsample of that many values; the histogram that
    scores the fits uses all of ``x``. The histogram covers the 0.1 %..99.9 % quantiles. Families
    in SLOW_FAMILY_CAP are fitted on at most that many values, then their log-likelihood, AIC and
    KS distance are evaluated on the same sample as the other families' (like for like).
    """
    for name in candidates:
        distribution(name)
    flat = checked(x)
    sample = subsample(flat, fit_size, seed)
    lo, hi = np.quantile(sample, [0.001, 0.999])
    hist = histogram(flat, bins=bins, range_=(float(lo), float(hi)))
    fits: list[Fit] = []
    failed: list[tuple[str, str]] = []
    whole: Prepared | None = None
    for name in candidates:
        cap = SLOW_FAMILY_CAP.get(name)
        used = subsample(sample, cap, seed) if cap is not None else sample
        drawn = _constant_draw(used, flat)
        if drawn is not None:
            failed.append((name, drawn))
            continue
        try:
            target: np.ndarray | Prepared = used
            if used is sample:  # every family but a capped one: the sample prepared once
                whole = whole if whole is not None else prepare(sample)
                target = whole
            fit = fit_one(name, target, hist)
            fits.append(fit if used.size == sample.size else rescore(fit, sample))
        except (AnalysisError, ValueError, RuntimeError, FloatingPointError) as exc:
            failed.append((name, str(exc) or type(exc).__name__))
    fits.sort(key=lambda f: f.sse)
    return FitRanking(
        fits=tuple(fits),
        failed=tuple(failed),
        histogram=hist,
        n_total=int(flat.size),
        n_fit=int(sample.size),
    )


def _constant_draw(used: np.ndarray, flat: np.ndarray) -> str | None:
    """Why a random subsample cannot be fitted when it drew one value only, from a sample
    that holds others (None when it holds several, or is the whole sample)."""
    if used.size == flat.size or used.size == 0 or used.min() != used.max():
        return None
    other = int(np.count_nonzero(flat != used[0]))
    return (f"the {used.size:,} values drawn at random to fit are all equal ({used[0]:.4g}); "
            f"only {other:,} of all {flat.size:,} differ from it, too few to fit a "
            "distribution")


@dataclass(frozen=True)
class JohnsonSU:
    """A Johnson S_U distribution with scipy's parameters (a, b, loc, scale)."""

    a: float
    b: float
    loc: float
    scale: float

    def frozen(self) -> Any:
        return frozen_distribution("johnsonsu", self.params)

    @property
    def params(self) -> tuple[float, float, float, float]:
        return (self.a, self.b, self.loc, self.scale)


def fit_johnsonsu(x: np.ndarray, fit_size: int | None = None, seed: int = 0) -> JohnsonSU:
    """Maximum-likelihood Johnson S_U fit of ``x`` (standardised, then mapped back)."""
    flat = checked(x)
    sample = subsample(flat, fit_size, seed)
    if (drawn := _constant_draw(sample, flat)) is not None:
        raise AnalysisError(drawn)
    lo, hi = float(sample.min()), float(sample.max())
    fit = fit_one("johnsonsu", sample, histogram(sample, bins=32, range_=(lo, hi)))
    a, b, loc, scale = fit.params
    return JohnsonSU(a=a, b=b, loc=loc, scale=scale)
