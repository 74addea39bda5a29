"""Bulk distribution fits: verified maxima of the binned likelihood, chosen by AIC.

Each candidate family is fitted by the engine of :mod:`ksptrace.studies.fits`: it maximises the
multinomial likelihood of the sample (a seeded subsample of ``fit_size`` values of a large
trace) grouped into equal-count cells, which is bounded for every family, and checks each
maximum before calling the fit ``ok``. Fits are ranked by CRITERION, the AIC on that same
likelihood: the ``ok`` fits first, best first, then the others, which are shown with their
status and never chosen. The SSE against the report's histogram (of all the data) and the KS
distance on the sample are reported alongside.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.stats as st

from ksptrace.errors import AnalysisError
from ksptrace.studies.fits import Binned, binned, equal_count_cells, family, fit_family
from ksptrace.studies.variability.stats.choices import DEFAULT_CANDIDATES
from ksptrace.studies.variability.stats.frozen import Bound
from ksptrace.studies.variability.stats.models import mean_of
from ksptrace.studies.variability.stats.ordered import OrderedRows

DEFAULT_BINS = 200
CRITERION = ("AIC of the binned likelihood (the fitted sample in equal-count cells); only fits "
             "whose maximum was verified (status ok) are ranked")
"""How the family is chosen, as the report states it."""
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
def frozen_distribution(name: str, params: tuple[float, ...]) -> Bound:
    """``distribution(name)(*params)``: the same values, without scipy's copy of the family per
    frozen distribution (:mod:`.frozen`), and made once (an analysis asks for the same fits'
    distributions many times per trace)."""
    return Bound(distribution(name), tuple(params))


@dataclass(frozen=True)
class Fit:
    """One fitted family. ``params`` are scipy's (shapes..., loc, scale), in seconds."""

    name: str
    params: tuple[float, ...]
    loglik: float
    """The binned log-likelihood at the fit (minus ``objective``)."""
    aic: float
    """AIC on the binned likelihood (the ranking criterion; equals ``criterion``)."""
    sse: float
    """Sum over histogram bins of (histogram density - pdf)^2."""
    ks: float
    """KS distance between the scored sample and the fitted cdf."""
    n_fit: int
    """Values the parameters were fitted on."""
    n_scored: int | None = None
    """Values the KS distance was evaluated on (None: ``n_fit``)."""
    converged: bool | None = None
    """True when the status is ``ok``."""
    status: str = "ok"
    """``ok`` (a verified maximum), ``boundary``, ``not converged`` or ``degenerate``."""
    objective: float = float("nan")
    """The negative binned log-likelihood, nats."""
    criterion: float = float("nan")
    """AIC on the binned likelihood."""
    reason: str = ""
    """Why the status is not ok."""
    limit: str = ""
    """For a ``boundary`` fit at a limit of its family that another family of the set is
    exactly (gamma's normal limit: "norm"), that family; else ""."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

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
    """Fits ranked by CRITERION (ok fits first), the families that failed, what was fitted."""

    fits: tuple[Fit, ...]
    failed: tuple[tuple[str, str], ...]
    """(family, reason) of each candidate whose fit failed."""
    histogram: Histogram
    n_total: int
    n_fit: int

    @property
    def best(self) -> Fit:
        """The ok fit with the least AIC; AnalysisError if no fit is ok."""
        found = next((f for f in self.fits if f.ok), None)
        if found is None:
            reasons = "; ".join([*(f"{n}: {r}" for n, r in self.failed),
                                 *(f"{f.name}: {f.status}" for f in self.fits)])
            raise AnalysisError(f"no candidate distribution has a verified fit ({reasons})")
        return found

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
    x: np.ndarray, bins: int = DEFAULT_BINS, range_: tuple[float, float] | None = None,
    ordered: OrderedRows | None = None,
) -> Histogram:
    """Density histogram of ``x`` normalised by the count of all values, in or out of range;
    counted on ``ordered`` (``x``'s rows sorted) when given: the same counts."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    if range_ is None:
        range_ = (float(flat.min()), float(flat.max()))
    lo, hi = range_
    if not hi > lo:
        hi = lo + max(abs(lo), 1.0) * 1e-9
    if ordered is not None and ordered.size == flat.size:
        counts = ordered.binned(bins, lo, hi)[0]
        edges = np.linspace(lo, hi, bins + 1)
    else:
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


@dataclass(frozen=True, eq=False)
class Prepared:
    """A checked sample, its sorted values (for the KS distance) and its equal-count cells
    (None, with the reason, when they cannot constrain a fit), made once per sample."""

    x: np.ndarray
    ordered: np.ndarray
    cells: Binned | None
    why: str = ""


def prepare(sample: np.ndarray) -> Prepared:
    x = checked(sample)
    ordered = np.sort(x)
    try:
        return Prepared(x, ordered, binned(*equal_count_cells(ordered)))
    except AnalysisError as exc:
        return Prepared(x, ordered, None, str(exc))


def density(frozen: Any, hist: Histogram) -> np.ndarray:
    """The fitted density at the histogram's bin centres: scipy's pdf, and where it is not a
    number (scipy 1.10's nct pdf is NaN at nc = 100, a limit the engine reaches, where 1.17's is
    not) the central difference of its cdf over a thousandth of the narrowest bin, so the SSE
    is the same figure on either stack."""
    x = hist.centres
    pdf = np.asarray(frozen.pdf(x), dtype=np.float64)
    bad = ~np.isfinite(pdf)
    if bad.any():
        h = 1e-3 * float(np.min(np.diff(hist.edges)))
        pdf[bad] = (frozen.cdf(x[bad] + h) - frozen.cdf(x[bad] - h)) / (2.0 * h)
    return pdf


def fit_one(name: str, sample: np.ndarray | Prepared, hist: Histogram, seed: int = 0) -> Fit:
    """The engine's fit of family ``name`` to ``sample`` (or to a sample already
    :func:`prepare`-d), scored by the SSE against ``hist`` and the KS distance."""
    distribution(name)
    prep = sample if isinstance(sample, Prepared) else prepare(sample)
    if prep.cells is None:
        raise AnalysisError(prep.why)
    found = fit_family(family(name), prep.cells, seed)
    sse, ks = float("nan"), float("nan")
    if found.status != "degenerate":
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            frozen = frozen_distribution(name, found.params)
            pdf = density(frozen, hist)
            ks = ks_distance(prep.x, frozen.cdf, prep.ordered)
        sse = float(np.sum((hist.density - pdf) ** 2))
    return Fit(name=name, params=found.params, loglik=-found.objective, aic=found.criterion,
               sse=sse, ks=ks, n_fit=int(prep.x.size), converged=found.ok, status=found.status,
               objective=found.objective, criterion=found.criterion, reason=found.reason,
               limit=found.limit)


def fit_candidates(
    x: np.ndarray,
    candidates: Sequence[str] = DEFAULT_CANDIDATES,
    bins: int = DEFAULT_BINS,
    fit_size: int | None = None,
    seed: int = 0,
    ordered: OrderedRows | None = None,
) -> FitRanking:
    """Fit every candidate family to ``x`` and rank the fits by CRITERION (ok fits first).

    ``fit_size`` fits on a seeded random subsample of that many values; the histogram that
    scores the fits (SSE) uses all of ``x`` over the subsample's 0.1 %..99.9 % quantiles
    (counted on ``ordered``, ``x``'s rows sorted, when given).
    """
    for name in candidates:
        distribution(name)
        family(name)
    flat = checked(x)
    sample = subsample(flat, fit_size, seed)
    lo, hi = np.quantile(sample, [0.001, 0.999])
    hist = histogram(flat, bins=bins, range_=(float(lo), float(hi)), ordered=ordered)
    fits: list[Fit] = []
    failed: list[tuple[str, str]] = []
    drawn = _constant_draw(sample, flat)
    prepared = prepare(sample) if drawn is None else None
    for name in candidates:
        if prepared is None:
            failed.append((name, str(drawn)))
            continue
        try:
            fits.append(fit_one(name, prepared, hist, seed))
        except (AnalysisError, ValueError, RuntimeError, FloatingPointError) as exc:
            failed.append((name, str(exc) or type(exc).__name__))
    fits.sort(key=lambda f: (not f.ok, f.criterion if np.isfinite(f.criterion) else np.inf))
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
    status: str = "ok"
    """The engine's status of the fit (see :class:`Fit`)."""

    def frozen(self) -> Any:
        return frozen_distribution("johnsonsu", self.params)

    @property
    def params(self) -> tuple[float, float, float, float]:
        return (self.a, self.b, self.loc, self.scale)


def fit_johnsonsu(x: np.ndarray, fit_size: int | None = None, seed: int = 0) -> JohnsonSU:
    """The engine's Johnson S_U fit of ``x`` (with its status)."""
    flat = checked(x)
    sample = subsample(flat, fit_size, seed)
    if (drawn := _constant_draw(sample, flat)) is not None:
        raise AnalysisError(drawn)
    prep = prepare(sample)  # only the engine's fit: no histogram error nor KS distance to score
    if prep.cells is None:
        raise AnalysisError(prep.why)
    found = fit_family(family("johnsonsu"), prep.cells, seed)
    a, b, loc, scale = found.params
    return JohnsonSU(a=a, b=b, loc=loc, scale=scale, status=found.status)
