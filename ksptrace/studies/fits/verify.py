"""An independent, slow check of the engine: a multi-start strong search on the same objective.

It shares nothing with the engine's search but the objective: from the engine's point, from
every start of the family's grid and from perturbed copies of the best of them, scipy's adaptive
Nelder-Mead (STRONG_EVALUATIONS evaluations), then Powell within the bounds, then L-BFGS-B.
It costs seconds per family, so only the benchmark and the writer of the golden maxima run it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ksptrace.studies.fits.binned import Binned, divergence, negative_loglik
from ksptrace.studies.fits.engine import starts
from ksptrace.studies.fits.families import Family

STRONG_EVALUATIONS = 2000
"""Evaluations of Nelder-Mead, and of Powell, from each start."""
STARTS = 3
"""Grid starts (the best by objective) searched besides the engine's point and two perturbed
copies of the first start."""


@dataclass(frozen=True)
class Strong:
    """The best point the strong search found."""

    objective: float
    """Negative binned log-likelihood, nats."""
    theta: np.ndarray


def strong_search(fam: Family, data: Binned, engine_theta: np.ndarray | None = None,
                  seed: int = 1) -> Strong:
    """The least objective found by several optimisers from many starts."""
    bounds = np.array(fam.theta_bounds())
    lower, upper = bounds[:, 0], bounds[:, 1]

    def f(theta: np.ndarray) -> float:
        if np.any(theta < lower) or np.any(theta > upper) or not np.isfinite(theta).all():
            return 1e300
        return float(divergence(fam, data, theta[None, :])[0])

    grid = np.clip(starts(fam, data), lower, upper)
    order = np.argsort(divergence(fam, data, grid)) if grid.size else np.array([], dtype=int)
    points = [grid[i] for i in order[:STARTS]]
    if engine_theta is not None and np.isfinite(engine_theta).all():
        points.insert(0, np.asarray(engine_theta, dtype=np.float64))
    rng = np.random.default_rng(seed)
    if points:
        points += [np.clip(points[0] + rng.normal(0.0, 0.3, points[0].size), lower, upper)
                   for _ in range(2)]
    best_x, best_f = None, np.inf
    box = list(zip(lower, upper, strict=True))
    stages = (("Nelder-Mead", None, {"adaptive": True, "maxfev": STRONG_EVALUATIONS,
                                     "xatol": 1e-10, "fatol": 1e-15}),
              ("Powell", box, {"xtol": 1e-10, "ftol": 1e-15, "maxfev": STRONG_EVALUATIONS}),
              ("L-BFGS-B", box, {"ftol": 1e-15, "gtol": 1e-12, "maxiter": 500}))
    for x0 in points:
        x = np.asarray(x0, dtype=np.float64)
        fx = f(x)
        for method, limits, options in stages:  # each from the best point so far
            res = minimize(f, x, method=method, bounds=limits, options=options)
            y = np.clip(np.asarray(res.x, dtype=np.float64), lower, upper)
            fy = f(y)
            if fy < fx:
                x, fx = y, fy
        if fx < best_f:
            best_x, best_f = x, fx
    if best_x is None:
        return Strong(float("inf"), np.full(fam.size, np.nan))
    return Strong(negative_loglik(fam, data, best_x), best_x)
