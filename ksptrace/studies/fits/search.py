"""The local search: projected damped Newton on the binned objective, L-BFGS-B where Newton
runs out of budget.

The objective's gradient and Hessian come from central differences (the family's step) whose
2d^2 + 1 points (d parameters) are one vectorised evaluation: with 200 cells one call costs
little more than one point. Each Newton step evaluates its trial points (:func:`_candidates`:
the Levenberg-Marquardt path, halved, and the Newton step and the last move repeated up to 32
times, each clipped to the box and shortened to end on it) in one more call and moves to the
best, lowering the damping ``mu`` by the floor that won, raising it if none lowers the
objective. A parameter at a bound with the gradient pointing out of the box is held there.
Newton stops when the Newton decrement (the gain a full step predicts, ``g' H^-1 g / 2``, over
the free parameters) is below DECREMENT_NATS, when STALL_STEPS steps together gained less than
that, or when its budget (MAX_ITERATIONS) runs out; then L-BFGS-B within the bounds continues,
and Newton again from its point.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ksptrace.studies.fits.binned import Binned, divergence
from ksptrace.studies.fits.families import Family

MAX_ITERATIONS = 25
"""Newton steps (and L-BFGS-B iterations) per search: the fixed budget."""
DECREMENT_NATS = 1e-5
"""Newton stops when a full step predicts a gain below this (in nats over the whole sample)."""
ROUNDING_NATS = 1e-3
"""Where no trial step lowers the objective (the rounding of a cdf computed to fewer digits,
nct's, hides what is left), Newton has converged if a full step predicts less than this."""
STALL_STEPS = 3
"""Newton also stops when its last STALL_STEPS steps together gained less than DECREMENT_NATS:
on a flat ridge the decrement, divided by a curvature near zero, can stay large while the
objective no longer moves (the local check then probes along the ridge)."""
RIDGE = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
"""Multiples of the least-damped Newton step and of the last move among a Newton step's
trials (towards a limit of the family the quadratic model predicts steps far too short)."""
LM_FACTORS = 16.0 ** np.arange(5)
"""The eigenvalue floors of one Newton step's trials, relative to the current damping."""
STIFF = 1e-6
"""Nats per value a finite-difference step may change the objective by through its curvature;
a parameter whose step changes it by more gets a shorter step (see :meth:`Objective.point`)."""
PRECISE_STEP = 1e-4
"""The finite-difference step of the families whose cdfs are computed to full precision; only
those steps are shrunk where the curvature is steep."""
MIN_STEP = 1e-9
"""The shortest finite-difference step in theta (rounding, not curvature, limits it below)."""
HOLD = 1e-9
"""A parameter this close to a bound (relative to the box) is held there if the gradient points
out of the box."""


def _stencil(d: int, step: float, with_pairs: bool) -> np.ndarray:
    """The centre, +-step along each axis and, for the Hessian, the four diagonal points of each
    pair of axes."""
    eye = step * np.eye(d)
    rows = [np.zeros(d), *itertools.chain.from_iterable((eye[i], -eye[i]) for i in range(d))]
    if with_pairs:
        for i, j in itertools.combinations(range(d), 2):
            rows += [eye[i] * si + eye[j] * sj for si, sj in ((1, 1), (1, -1), (-1, 1),
                                                              (-1, -1))]
    return np.array(rows)


def eigen(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and eigenvectors (columns) of the small symmetric ``h``, by cyclic
    Jacobi rotations on Python floats. ``np.linalg.eigh`` gives the same to rounding, but its
    LAPACK calls BLAS routines that OpenBLAS may split over threads, and the rounding, which a
    flat ridge turns into a different stopping point, then depends on OPENBLAS_NUM_THREADS."""
    d = h.shape[0]
    a: list[list[float]] = np.asarray(h, dtype=np.float64).tolist()
    v = [[1.0 if i == j else 0.0 for j in range(d)] for i in range(d)]
    pairs = [(p, q) for p in range(d - 1) for q in range(p + 1, d)]
    off_diagonal = [(i, j) for i in range(d) for j in range(d) if i != j]
    sqrt = math.sqrt
    for _sweep in range(50):
        off = sum([a[i][j] * a[i][j] for i, j in off_diagonal])
        scale = sum([a[i][i] * a[i][i] for i in range(d)])
        if off <= 1e-30 * max(scale, 1e-300):
            break
        for p, q in pairs:
            ap, aq = a[p], a[q]
            if ap[q] == 0.0:
                continue
            theta = (aq[q] - ap[p]) / (2.0 * ap[q])
            t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + sqrt(theta * theta + 1.0))
            c = 1.0 / sqrt(t * t + 1.0)
            s = t * c
            for row in a:  # columns p and q
                akp, akq = row[p], row[q]
                row[p], row[q] = c * akp - s * akq, s * akp + c * akq
            for k in range(d):  # rows p and q
                apk, aqk = ap[k], aq[k]
                ap[k], aq[k] = c * apk - s * aqk, s * apk + c * aqk
            for row in v:
                vkp, vkq = row[p], row[q]
                row[p], row[q] = c * vkp - s * vkq, s * vkp + c * vkq
    lam = np.array([a[i][i] for i in range(d)])
    order = np.argsort(lam, kind="stable")
    return lam[order], np.array(v)[:, order]


def newton_step(lam: np.ndarray, vec: np.ndarray, g: np.ndarray, floor: float) -> np.ndarray:
    """``-V diag(1 / max(|lam|, floor)) V' g``, by elementwise sums: no BLAS call, whose result
    can depend on the number of threads it runs on, and a flat ridge amplifies any difference
    into a different stopping point."""
    proj = (vec * g[:, None]).sum(axis=0) / np.maximum(np.abs(lam), floor)
    return -(vec * proj[None, :]).sum(axis=1)


def newton_steps(lam: np.ndarray, vec: np.ndarray, g: np.ndarray, floors: np.ndarray
                 ) -> np.ndarray:
    """:func:`newton_step` at each of ``floors``, one row each, in one vectorised evaluation
    (the same operations on each element, so the same bits)."""
    proj = (vec * g[:, None]).sum(axis=0) / np.maximum(np.abs(lam), floors[:, None])
    return -(vec[None, :, :] * proj[:, None, :]).sum(axis=2)


@dataclass(frozen=True)
class Point:
    """The objective (nats per value), its gradient and Hessian at ``x``; ``free`` marks the
    parameters not held at a bound by a gradient that points out of the box."""

    x: np.ndarray
    f: float
    g: np.ndarray
    h: np.ndarray
    free: np.ndarray

    @functools.cached_property
    def eigen(self) -> tuple[np.ndarray, np.ndarray]:
        """The eigenvalues and eigenvectors (computed once) of the Hessian restricted to the free
        parameters, the vectors padded with zeros at the held ones."""
        idx = np.flatnonzero(self.free)
        lam, sub = eigen(self.h[np.ix_(idx, idx)])
        vec = np.zeros((self.x.size, idx.size))
        vec[idx, :] = sub
        return lam, vec

    def decrement(self, n: int) -> float:
        """``n g' H^-1 g / 2`` over the free parameters, the Hessian's eigenvalues floored (inf
        if it has none > 0; 0 if every parameter is held)."""
        if not np.isfinite(self.f):
            return float("inf")
        lam, vec = self.eigen
        if lam.size == 0:
            return 0.0
        if lam[-1] <= 0:
            return float("inf")
        proj = (vec * self.g[:, None]).sum(axis=0)
        return float(0.5 * n * (proj**2 / np.maximum(lam, lam[-1] * 1e-12)).sum())


class Objective:
    """The binned objective of one family and sample in ``theta``, counting evaluations."""

    def __init__(self, fam: Family, data: Binned) -> None:
        self.fam, self.data, self.evaluations = fam, data, 0
        self.d = fam.size
        self.step = fam.step
        self.shrinks = fam.step <= PRECISE_STEP
        """A family whose step was raised for a cdf computed to fewer digits (nct) keeps it:
        below it the rounding, not the curvature, decides the differences."""
        self.decrement_nats = DECREMENT_NATS if self.shrinks else ROUNDING_NATS
        """Newton's stopping decrement: for a cdf computed to fewer digits, the gain its
        rounding hides (on a flat ridge the decrement computed from rounded differences
        wanders above 1e-5 nats on one CPU and below it on another)."""
        self.full = _stencil(self.d, 1.0, with_pairs=True)
        self.axes = _stencil(self.d, fam.step, with_pairs=False)
        bounds = np.array(fam.theta_bounds())
        self.lower, self.upper = bounds[:, 0], bounds[:, 1]
        self.hold = HOLD * (self.upper - self.lower)

    def values(self, thetas: np.ndarray) -> np.ndarray:
        self.evaluations += thetas.shape[0]
        return divergence(self.fam, self.data, thetas)

    def point(self, x: np.ndarray) -> Point:
        """Value, gradient and Hessian at ``x`` (inf and zeros outside the bounds), by central
        differences. Where the curvature along a parameter is so steep that the family's step
        changes the objective by more than STIFF nats per value (a sample packed into a
        sliver of its range pins the location to far less than the step), the differences are
        taken again with that parameter's step shrunk to where it changes it by STIFF: at the
        family's step such a derivative is a chord across the valley, not a slope. Not for a
        family whose step was raised above PRECISE_STEP for its cdf's rounding (nct)."""
        d = self.d
        if np.any(x < self.lower) or np.any(x > self.upper):
            return Point(x, float("inf"), np.zeros(d), np.eye(d), np.ones(d, dtype=bool))
        steps = np.full(d, self.step)
        found = self._differences(x, steps)
        if found is None:
            return Point(x, float(self.values(x[None, :])[0]), np.zeros(d), np.eye(d),
                         np.ones(d, dtype=bool))
        f0, g, h = found
        curve = np.abs(np.diag(h)) * steps**2
        if self.shrinks and np.any(curve > STIFF):
            shrunk = np.where(curve > STIFF, steps * np.sqrt(STIFF / np.maximum(curve, STIFF)),
                              steps)
            again = self._differences(x, np.maximum(shrunk, MIN_STEP))
            if again is not None:
                f0, g, h = again
        return Point(x, f0, g, h, ~self.held(x, g))

    def _differences(self, x: np.ndarray, steps: np.ndarray
                     ) -> tuple[float, np.ndarray, np.ndarray] | None:
        """Value, central-difference gradient and Hessian with per-parameter ``steps``; None
        if a stencil point is not finite."""
        d = self.d
        f = self.values(x[None, :] + self.full * steps[None, :])
        if not np.isfinite(f).all():
            return None
        plus, minus = f[1:2 * d + 1:2], f[2:2 * d + 1:2]
        h = np.diag((plus - 2 * f[0] + minus) / steps**2)
        for k, (i, j) in enumerate(itertools.combinations(range(d), 2)):
            pp, pm, mp, mm = f[2 * d + 1 + 4 * k: 2 * d + 5 + 4 * k]
            h[i, j] = h[j, i] = (pp - pm - mp + mm) / (4 * steps[i] * steps[j])
        return float(f[0]), (plus - minus) / (2 * steps), h

    def held(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The parameters at a bound whose gradient points out of the box."""
        return np.asarray(((x <= self.lower + self.hold) & (g > 0))
                          | ((x >= self.upper - self.hold) & (g < 0)))

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f = self.values(np.clip(x, self.lower, self.upper)[None, :] + self.axes)
        d = self.d
        if not np.isfinite(f).all():
            return float(f[0]) if np.isfinite(f[0]) else 1e300, np.zeros(d)
        return float(f[0]), (f[1:2 * d + 1:2] - f[2:2 * d + 1:2]) / (2 * self.step)


def _candidates(here: Point, mu: float, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Trial steps from ``here``: the Newton step with the Hessian's eigenvalues floored at
    ``mu`` times 1, 16, 256, ... (the Levenberg-Marquardt path from Newton towards steepest
    descent), each also halved, the least-damped one and the last move repeated RIDGE times
    (along a ridge, where each Newton step is short, the moves keep their direction); the
    floors beside them."""
    lam, vec = here.eigen
    floors = max(mu, 1e-12 * max(abs(float(lam[-1])), 1.0)) * LM_FACTORS
    steps = newton_steps(lam, vec, here.g, floors)
    out = np.vstack((steps, 0.5 * steps, RIDGE[1:, None] * steps[0], RIDGE[:, None] * last))
    return out, np.concatenate((floors, floors, np.full(2 * RIDGE.size - 1, floors[0])))


def _inside(x: np.ndarray, steps: np.ndarray, lower: np.ndarray, upper: np.ndarray
            ) -> np.ndarray:
    """``x`` plus each step shortened to end on the box if it would leave it (its direction
    kept, where clipping would bend it along the bound)."""
    room = np.full(steps.shape, np.inf)  # no bound ahead along a zero (or NaN) step
    np.divide(upper - x, steps, out=room, where=steps > 0)
    np.divide(lower - x, steps, out=room, where=steps < 0)
    frac = np.minimum(1.0, room.min(axis=1))
    return np.clip(x + np.maximum(frac, 0.0)[:, None] * steps, lower, upper)


def _trial_values(obj: Objective, trials: np.ndarray, half: int) -> np.ndarray:
    """The objective at each row of ``trials``, its clipped steps then the same steps shortened
    to the box (``half`` rows each), in one vectorised call in which a shortened step equal to
    its clipped one (every step that stays inside the box) is not evaluated twice: it takes its
    twin's value. A row's value does not depend on the other rows of the call, as long as
    there are at least two (each row's cells are summed in order; :func:`.binned.divergence`),
    so the values are those of evaluating every row."""
    moved = np.flatnonzero(np.any(trials[half:] != trials[:half], axis=1))
    got = obj.values(np.vstack((trials[:half], trials[half + moved])))
    values = np.concatenate((got[:half], got[:half]))
    values[half + moved] = got[half:]
    return values


def newton(obj: Objective, x0: np.ndarray) -> tuple[Point, bool]:
    """Projected damped Newton from ``x0``; True if it stopped on the decrement (not on its
    budget or on a point no trial step improves). Each step evaluates every trial step of
    :func:`_candidates` in one vectorised call and moves to the best; parameters at a bound
    with the gradient pointing out stay there."""
    here = obj.point(np.clip(x0, obj.lower, obj.upper))
    mu = 1e-3
    n = obj.data.n
    gains: list[float] = []
    last = np.zeros(here.x.size)
    for _ in range(MAX_ITERATIONS):
        if here.decrement(n) <= obj.decrement_nats or sum(gains[-STALL_STEPS:]) * n < (
                DECREMENT_NATS if len(gains) >= STALL_STEPS else -1.0):
            return here, True
        for _try in range(3):
            steps, floors = _candidates(here, mu, np.where(here.free, last, 0.0))
            clipped = np.clip(here.x + steps, obj.lower, obj.upper)
            trials = np.vstack((clipped, _inside(here.x, steps, obj.lower, obj.upper)))
            floors = np.concatenate((floors, floors))
            values = _trial_values(obj, trials, clipped.shape[0])
            best = int(np.argmin(values))
            if values[best] < here.f:
                gains.append(here.f - float(values[best]))
                last = trials[best] - here.x
                here, mu = obj.point(trials[best]), float(floors[best]) / 8
                break
            mu = float(np.max(floors)) * 16  # next try: beyond the most damped trial
        else:  # no trial lowers the objective: converged if little gain was left to find
            return here, here.decrement(n) <= ROUNDING_NATS
    return here, here.decrement(n) <= obj.decrement_nats


def search(obj: Objective, x0: np.ndarray) -> tuple[Point, bool]:
    """Newton from ``x0``; if it did not converge, L-BFGS-B within the bounds from where it
    stopped, then Newton again from L-BFGS-B's point. True if the point returned is one where
    Newton converged."""
    found, converged = newton(obj, x0)
    if converged:
        return found, True
    res = minimize(obj.value_and_gradient, found.x, jac=True, method="L-BFGS-B",
                   bounds=list(zip(obj.lower, obj.upper, strict=True)),
                   options={"maxiter": MAX_ITERATIONS * 3, "ftol": 1e-14, "gtol": 1e-10})
    polished, converged = newton(obj, np.asarray(res.x, dtype=np.float64))
    return (polished, converged) if polished.f <= found.f else (found, False)
