"""Maximise the binned likelihood of one family, then check the maximum before calling it one.

1. Starts: for every shape vector of the family's grid, loc and scale are set so that the
   family's quartiles equal the sample's (the normal starts from the binned mean and standard
   deviation); the whole grid is evaluated in one vectorised call and the best start is kept.
2. The search (:mod:`.search`): projected damped Newton, continued by L-BFGS-B where Newton
   runs out of budget, in coordinates where the family's limits are points
   (:mod:`.families`).
3. The local check: Newton converged (its decrement, or a stall on a flat ridge), and one
   vectorised probe at several distances along the Newton direction, down the gradient and
   both ways along the least-curvature direction (a flat ridge, a saddle) gains no more than
   TOLERANCE_NATS: the point is then a verified maximum, within that much of the best value
   near it, whether or not the parameters along a flat ridge are pinned down. If a probe
   gains more, the search continues from there and the check is repeated, at most ROUNDS
   times.

The status says what the number is: ``ok`` (verified, interior), ``boundary`` (the best point
lies on a parameter bound: a limit of the family, such as gamma's normal limit, fits better
than any interior point), ``not converged`` (the check kept improving it), ``degenerate``
(the best fit gives a non-empty cell no probability, or its objective is not finite).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, replace

import numpy as np
import scipy.stats as st
from scipy.optimize import minimize

from ksptrace.studies.fits.binned import Binned, divergence, negative_loglik, starved
from ksptrace.studies.fits.families import LOC_BOUND, SCALE_BOUNDS, Family, limit_at
from ksptrace.studies.fits.search import (
    MAX_ITERATIONS,
    Objective,
    Point,
    newton,
    newton_step,
    search,
)

STATUSES = ("ok", "boundary", "not converged", "degenerate")
ROUNDS = 10
"""Rounds of probes and searches before a point that keeps improving is ``not converged``."""
TOLERANCE_NATS = 1e-3
"""A probe that gains more than this is an improvement; below it the points agree."""
PROBE_LENGTHS = np.array([1e-3, 1e-2, 0.1, 1.0, 3.0, 10.0])
"""Step lengths (in theta) of the directional probes of the local check."""
AT_BOUND = 1e-6
GUARANTEE_NATS = 1e-2
"""What ``ok`` and ``boundary`` promise: no point of the family's box (for ``boundary``, of the
bound it stopped on) is better than the fit by more than this many nats, on any CPU. The local
check tests TOLERANCE_NATS; the guarantee is what the strong multi-start search
(:mod:`.verify`) confirms on the golden and the real-shaped traces (tests/studies/fits,
bench/fits.py), and what the golden comparisons allow a fresh fit to fall short by."""


@dataclass(frozen=True)
class EngineFit:
    """One family's binned maximum-likelihood fit, in seconds, with its status."""

    family: str
    params: tuple[float, ...]
    """scipy's (shapes..., loc, scale), loc and scale in seconds."""
    status: str
    objective: float
    """Negative binned log-likelihood, nats (lower is better)."""
    criterion: float
    """AIC on the same likelihood: 2 (number of parameters) + 2 objective."""
    evaluations: int
    """Parameter vectors evaluated (every point of every vectorised call)."""
    reason: str = ""
    """Why the status is not ok."""
    limit: str = ""
    """For a ``boundary`` fit at a limit of the family that another family of the set is
    exactly (gamma's normal limit: "norm"), that family; else ""."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def starts(fam: Family, data: Binned) -> np.ndarray:
    """Rows of starting ``theta``. For every grid shape, loc and scale matched to the sample's
    quartiles (and, for a family without shapes, to its binned mean and standard deviation);
    for a family bounded below, also the support's lower end put below the first edge and the
    median matched (a quartile match can leave the lowest values outside the
    support, where the objective has no slope to follow)."""
    z25, z50, z75 = data.quantiles(np.array([0.25, 0.5, 0.75]))
    grid = np.array(fam.grid, dtype=np.float64)
    u, edge = _grid_quartiles(fam.name, fam.grid)
    with np.errstate(all="ignore"):
        scale = (z75 - z25) / (u[:, 2] - u[:, 0])
        loc = z25 - scale * u[:, 0]
        e0 = data.edges[0]
        floor = e0 - 0.1 * (z50 - e0)
        scale2 = (z50 - floor) / (u[:, 1] - edge)
        loc2 = floor - scale2 * edge
    bounded = np.isfinite(edge)
    all_shapes = np.vstack((grid, grid[bounded]))
    all_loc = np.concatenate((loc, loc2[bounded]))
    all_scale = np.concatenate((scale, scale2[bounded]))
    lo, hi = SCALE_BOUNDS
    good = (np.isfinite(all_scale) & (all_scale > lo) & (all_scale < hi)
            & (np.abs(all_loc) < LOC_BOUND))
    params = np.column_stack((all_shapes[good], all_loc[good], all_scale[good]))
    thetas = fam.thetas(params, data.anchor)
    if not fam.shapes:  # also the binned mean and standard deviation
        mean, std = data.moments()
        thetas = np.vstack((thetas, [[mean, np.log(std)]]))
    return thetas[np.isfinite(thetas).all(axis=1)]


@functools.lru_cache(maxsize=32)
def _grid_quartiles(name: str, grid: tuple[tuple[float, ...], ...]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The quartiles (one row per grid shape) and the support's lower end of scipy's standard
    family ``name`` at each shape of ``grid``: the same for every sample, so computed once per
    family (scipy's ppf costs more than the starts it feeds). Read-only arrays."""
    g = np.array(grid, dtype=np.float64)
    dist = getattr(st, name)
    shapes = tuple(g[:, i:i + 1] for i in range(g.shape[1]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a shape of the grid where scipy's ppf is inaccurate
        u = np.array(dist.ppf(np.array([[0.25, 0.5, 0.75]]), *shapes), dtype=np.float64)
        edge = np.array(np.broadcast_to(dist.support(*shapes)[0], u[:, :1].shape)[:, 0],
                        dtype=np.float64)
    u.flags.writeable = False
    edge.flags.writeable = False
    return u, edge


def fit_family(fam: Family, data: Binned, seed: int = 0) -> EngineFit:
    """The verified binned maximum-likelihood fit of ``fam`` to ``data``. ``seed`` is kept for
    the callers' signature: the engine draws no random number. A family with a variant (nct:
    scipy's parameters, where its normal limit is a straight ridge; gamma and exponweib: edge
    coordinates, which resolve on a log scale the approach of the support's lower end to the
    lowest values where the density spikes there) is searched first in the coordinates that
    suit the sample: the edge coordinates where the best start's density is infinite at the
    lower end (``Family.spiky``: in the family's own coordinates each search creeps along that
    approach for thousands of evaluations; that best start joins the edge coordinates'
    starts), the family's own otherwise. A
    first search that does not converge is continued in the other coordinates, before any round
    of probes is spent; that fit is kept if it is verified, or if it converged on a bound no
    worse than the first search (then, if it came from the edge coordinates, searched along the
    bound in the family's own too, where a limit may be a corner of the box); otherwise the
    rounds are run in the first coordinates too, and the better fit (a verified one first) is
    kept."""
    variant = fam.edge_variant
    if variant is None:
        return _fit(fam, data)
    start = _best_start(fam, data)
    spiky = start is not None and fam.spiky is not None and bool(fam.spiky(start)[0])
    a, b = (variant, fam) if spiky else (fam, variant)
    # the edge coordinates' own grid is coarse: the family's best start joins their starts
    extra = a.thetas(start, data.anchor)[0] if spiky and start is not None else None
    first = _fit(a, data, extra, patient=False)
    if first.status not in ("not converged", "degenerate"):
        if a is fam:
            return first
        if a.restricts or extra is None or not np.isfinite(extra).all():
            # an edge box that leaves part of the family out (Johnson S_U, whose support has
            # no lower end: L above the lowest values), or the family's best start outside it:
            # its own coordinates too, from the same start
            own = _fit(fam, data, patient=False)
            if own.status in ("ok", "boundary") and own.objective < first.objective:
                return replace(own, evaluations=own.evaluations + first.evaluations)
            first = replace(first, evaluations=own.evaluations + first.evaluations)
        return _along_limit(fam, data, first)
    other = _fit(b, data, _theta(b, data, first))
    spent = first.evaluations + other.evaluations
    if other.ok:
        return replace(other, evaluations=spent)
    if other.status == "boundary" and other.objective <= first.objective:
        best = _along_limit(fam, data, other) if b is variant else other
        return replace(best, evaluations=spent - other.evaluations + best.evaluations)
    again = _fit(a, data, _theta(a, data, first))
    best = min((again, other), key=lambda f: (not f.ok, f.objective))
    return replace(best, evaluations=spent + again.evaluations)


def _best_start(fam: Family, data: Binned) -> np.ndarray | None:
    """scipy's parameters (one row, standardised) of the best of ``fam``'s starts; None if it
    has none."""
    x0s = starts(fam, data)
    if x0s.shape[0] == 0:
        return None
    best = x0s[int(np.argmin(divergence(fam, data, x0s)))]
    return np.asarray(fam.scipy_params(best, data.anchor))


def _along_limit(fam: Family, data: Binned, fit: EngineFit) -> EngineFit:
    """A ``boundary`` fit found in edge coordinates, searched along its bound in ``fam``'s own
    coordinates too (exponweib's a -> infinity is a corner of the own box, its scale on the
    way to zero in the edge box); the better of the two, with both searches' evaluations."""
    if fit.status != "boundary":
        return fit
    own = _fit(fam, data, _theta(fam, data, fit))
    best = own if own.status in ("ok", "boundary") and own.objective < fit.objective else fit
    return replace(best, evaluations=fit.evaluations + own.evaluations)


def _theta(fam: Family, data: Binned, fit: EngineFit) -> np.ndarray:
    """``fit``'s parameters in ``fam``'s coordinates."""
    z = np.array([*fit.params[:-2], (fit.params[-2] - data.centre) / data.spread,
                  fit.params[-1] / data.spread])
    return fam.theta(z, data.anchor)


def _fit(fam: Family, data: Binned, extra: np.ndarray | None = None, patient: bool = True
         ) -> EngineFit:
    """One family's search and check, from its starts and ``extra`` (a theta) if given. If not
    ``patient``, the search is Newton's alone (no L-BFGS-B continuation), and one that does not
    converge is reported as such, without probes: the caller tries other coordinates first."""
    obj = Objective(fam, data)
    lower, upper = obj.lower, obj.upper
    x0s = starts(fam, data)
    if extra is not None and np.isfinite(extra).all():
        x0s = np.vstack((x0s, extra))
    if x0s.shape[0] == 0:
        return _result(fam, data, None, "degenerate", obj, "no starting point fits the quartiles")
    x0s = np.clip(x0s, lower, upper)
    x0 = x0s[int(np.argmin(obj.values(x0s)))]
    best, converged = search(obj, x0) if patient else newton(obj, x0)
    if not converged and not patient:
        return _status(fam, data, obj, best, "Newton's decrement stayed above "
                                             f"{obj.decrement_nats:g} nats")
    tolerance = TOLERANCE_NATS / data.n
    for _ in range(ROUNDS):
        probed = _probe(obj, best)
        if not probed.f < best.f - tolerance:
            break
        again, converged = search(obj, probed.x)
        best, converged = (again, converged) if again.f < probed.f else (probed, False)
    else:
        return _status(fam, data, obj, best, "the probes still improved the objective after "
                                             f"{ROUNDS} rounds")
    if not converged:
        return _status(fam, data, obj, best, "Newton's decrement stayed above "
                                             f"{obj.decrement_nats:g} nats")
    return _status(fam, data, obj, _along_bounds(obj, best, tolerance), "")


def _along_bounds(obj: Objective, best: Point, tolerance: float) -> Point:
    """``best`` if it is inside the box; on a bound, the best point along it: where a limit of
    the family is approached along a curved valley (exponweib's a -> infinity, which drives its
    scale to the box's bound on the way) Newton's steps, held at the bound, stall short of what
    the bound offers. L-BFGS-B, which follows the bound and the valley, continues from there,
    then Newton, for at most ROUNDS rounds while a round gains more than ``tolerance``."""
    lower, upper = _near_bound(obj, best.x)
    if not (lower.any() or upper.any()):
        return best
    box = list(zip(obj.lower, obj.upper, strict=True))
    for _ in range(ROUNDS):
        res = minimize(obj.value_and_gradient, best.x, jac=True, method="L-BFGS-B", bounds=box,
                       options={"maxiter": 3 * MAX_ITERATIONS, "ftol": 1e-14, "gtol": 1e-10})
        again, _ = newton(obj, np.clip(np.asarray(res.x, dtype=np.float64), obj.lower,
                                       obj.upper))
        if not again.f < best.f - tolerance:
            break
        best = again
    return best


def _probe(obj: Objective, here: Point) -> Point:
    """The best of PROBE_LENGTHS steps along the Newton direction, down the gradient, and both
    ways along the Hessian's least-curvature direction (a flat ridge or a saddle), all in one
    vectorised evaluation; ``here`` if none is lower. Parameters held at a bound stay there."""
    lam, vec = here.eigen
    if lam.size == 0:
        return here
    floor = max(1e-12, 1e-9 * abs(float(lam[-1])))
    step = newton_step(lam, vec, here.g, floor)
    descent = -np.where(here.free, here.g, 0.0)
    dirs = [vec[:, 0], -vec[:, 0]]
    for d in (step, descent):
        size = float(np.sqrt(np.sum(d * d)))
        if np.isfinite(size) and size > 0:
            dirs.append(d / size)
    moves = PROBE_LENGTHS[:, None, None] * np.array(dirs)[None, :, :]
    points = np.clip(here.x + moves.reshape(-1, here.x.size), obj.lower, obj.upper)
    values = obj.values(points)
    i = int(np.argmin(values))
    return obj.point(points[i]) if values[i] < here.f else here


def _near_bound(obj: Objective, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which coordinates of ``x`` are at their lower and at their upper bound."""
    span = obj.upper - obj.lower
    return (np.asarray(x - obj.lower <= AT_BOUND * span),
            np.asarray(obj.upper - x <= AT_BOUND * span))


def _status(fam: Family, data: Binned, obj: Objective, best: Point, unverified: str
            ) -> EngineFit:
    x = best.x
    if not np.isfinite(best.f) or starved(fam, data, x):
        return _result(fam, data, x, "degenerate", obj,
                       "the best fit gives no probability to some observed values")
    if unverified:
        return _result(fam, data, x, "not converged", obj, unverified)
    lower, upper = _near_bound(obj, x)
    if lower.any() or upper.any():
        words, limit = limit_at(fam, lower, upper, fam.scipy_params(x, data.anchor)[0])
        return replace(_result(fam, data, x, "boundary", obj, f"the best point lies on a bound: "
                                                              f"{words}"), limit=limit)
    return _result(fam, data, x, "ok", obj, "")


def _result(fam: Family, data: Binned, x: np.ndarray | None, status: str, fn: Objective,
            reason: str) -> EngineFit:
    if x is None:
        params = tuple(float("nan") for _ in range(fam.size))
        objective = float("inf")
    else:
        z = fam.scipy_params(x, data.anchor)[0]
        params = (*(float(v) for v in z[:-2]), data.centre + data.spread * float(z[-2]),
                  data.spread * float(z[-1]))
        objective = negative_loglik(fam, data, x)
    return EngineFit(family=fam.name, params=params, status=status, objective=objective,
                     criterion=2.0 * fam.size + 2.0 * objective, evaluations=fn.evaluations,
                     reason=reason)
