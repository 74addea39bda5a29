"""Goodness of fit on a held-out half (issue 63): does a fit that is a verified maximum also
describe data it was not fitted on, in the tail that E[max of N] depends on?

The iterations are split in two by a seeded random half of the iteration indices, the same for
every rank. Each half then spans the whole run, so slow drift or a level shift falls on both
alike and cannot fake a miss (a first-half/second-half split would call a drifting run's right
family wrong); and no restart-cycle position falls wholly in one half, as even cycle positions
would with alternate iterations (GMRES(30): iteration k sits at position k mod 30).

The chosen family is refitted by the same engine on the first half (a seeded subsample of
``fit_size`` values, as the bulk fit) and checked on the second: its 99th percentile against the
held-out data's, flagged when they differ by more than :data:`TAIL_FLAG` (a fraction of the
data's) and the model's lies outside the held-out q99's own 95 % interval (order statistics:
near a 1 % detour rate the q99 of a thousand values falls anywhere between the bulk and the
detours, the data's sampling error, not the model's miss), and the KS distance of the held-out
half from the refitted cdf beside the refit's own (in sample). The bulk-plus-detours model
(:mod:`.detours`, whose :data:`TAIL_FLAG` this is) is checked on the same halves. Pure: arrays
in, frozen dataclasses out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.fits import family, fit_family
from ksptrace.studies.variability.stats.detours import (
    TAIL_FLAG,
    DetourModel,
    TailCheck,
    fit_detours,
    q99_interval,
    split_columns,
    tail_check,
)
from ksptrace.studies.variability.stats.fitting import (
    frozen_distribution,
    ks_distance,
    prepare,
    subsample,
)

__all__ = ["TAIL_FLAG", "HalfFit", "Tails", "half_fit", "split_columns", "tails_of"]
MAX_VALUES = 1 << 20
"""At most this many values (whole ranks, seeded) enter the checks and the detour model."""


def some_ranks(times: np.ndarray, seed: int = 0) -> np.ndarray:
    """``times`` (ranks × iterations), or a seeded subset of its ranks with at most
    :data:`MAX_VALUES` values (at least one rank)."""
    t = np.asarray(times, dtype=np.float64)
    rows = max(1, MAX_VALUES // max(t.shape[1], 1))
    if t.shape[0] <= rows:
        return t
    keep = np.sort(np.random.default_rng(seed).choice(t.shape[0], rows, replace=False))
    return t[keep]


@dataclass(frozen=True)
class HalfFit:
    """A family refitted on one half of the iterations, checked on the other."""

    family: str
    status: str
    """The refit's status (``ok`` for a verified maximum)."""
    model_q99: float
    data_q99: float
    """The held-out half's 99th percentile."""
    data_low: float
    data_high: float
    """Its distribution-free 95 % interval (:func:`~.detours.q99_interval`)."""
    ks: float
    """KS distance of the held-out half from the refitted cdf."""
    ks_fitted: float
    """KS distance of the refit's own half (in sample), for comparison."""

    @property
    def miss(self) -> float:
        """(model q99 − data q99) / data q99."""
        return (self.model_q99 - self.data_q99) / self.data_q99

    @property
    def flagged(self) -> bool:
        """A miss beyond :data:`TAIL_FLAG` and outside the held-out q99's 95 % interval."""
        inside = self.data_low <= self.model_q99 <= self.data_high
        return not (abs(self.miss) <= TAIL_FLAG or inside)


def half_fit(times: np.ndarray, name: str, fit_size: int | None = 10_000,
             seed: int = 0) -> HalfFit:
    """Family ``name`` fitted on a random half of the iterations of ``times`` (ranks ×
    iterations), its q99 and KS distance against the other half."""
    t = some_ranks(times, seed)
    if t.ndim != 2:
        raise AnalysisError(f"a held-out half needs ranks × iterations, got {t.shape}")
    first, second = split_columns(t.shape[1], seed)
    fitted, held = t[:, first].ravel(), t[:, second].ravel()
    prep = prepare(subsample(fitted, fit_size, seed))
    if prep.cells is None:
        raise AnalysisError(prep.why)
    found = fit_family(family(name), prep.cells, seed)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        frozen = frozen_distribution(name, found.params)
        q99 = float(frozen.ppf(0.99))
        scored = np.sort(subsample(held, fit_size, seed + 1))
        ks = ks_distance(scored, frozen.cdf, scored)
        ks_fitted = ks_distance(prep.x, frozen.cdf, prep.ordered)
    return HalfFit(name, found.status, q99 if math.isfinite(q99) else float("inf"),
                   *q99_interval(held), ks, ks_fitted)


@dataclass(frozen=True)
class Tails:
    """A run's checks on held-out halves, and its bulk-plus-detours model."""

    detours: DetourModel | None
    """Fitted on all the kept iterations (at most :data:`MAX_VALUES` values)."""
    detour_check: TailCheck | None
    best_fit: HalfFit | None
    """The run's best family (:attr:`TraceAnalysis.best_fit_name`) on the halves."""


def tails_of(times: np.ndarray, best: str | None, fit_size: int | None, seed: int,
             notes: list[str]) -> Tails:
    """The :class:`Tails` of ``times`` (ranks × kept iterations); what cannot be computed is
    None with a note that says why."""
    t = some_ranks(times, seed)
    model = check = half = None
    try:
        model = fit_detours(t)
        check = tail_check(t, seed)
    except AnalysisError as exc:
        notes.append(f"no bulk-plus-detours model: {exc}")
    if best is not None:
        try:
            half = half_fit(t, best, fit_size, seed)
        except (AnalysisError, ValueError, RuntimeError, FloatingPointError) as exc:
            notes.append(f"no held-out-half check of the {best} fit: {exc}")
    return Tails(model, check, half)
