"""The best model of one curve T(m), chosen by leave-one-size-out error (the survey's advice to
query all models and keep the one that predicts best, section 3.1.1).

Every candidate (Hockney, LogGP, PLogP) is fitted once per measured size with that size held
out, and predicts it; the error of a model is the root mean square of those relative
prediction errors. A model that only fits the points it was given (PLogP with a break at every
wiggle) predicts held-out sizes badly and loses. Ties go to the simpler model, in the order of
:data:`MODELS`. Pure: arrays in, a frozen result out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives import models as cm

MODELS: tuple[str, ...] = ("hockney", "loggp", "plogp")
TIE = 1e-9
"""Errors (relative prediction errors, dimensionless) closer than this, or closer than this
share of the least, count as equally good: exact data fits every model to rounding."""


@dataclass(frozen=True)
class ModelChoice:
    best: str
    errors: Mapping[str, float]
    """Root-mean-square relative error of each model on its held-out sizes."""
    held_out: int
    """Sizes held out, one at a time."""


def predict(fit: cm.ModelFit, sizes: np.ndarray) -> np.ndarray:
    """A fitted model's time at any sizes."""
    m = np.asarray(sizes, dtype=np.float64)
    p = fit.params
    if fit.model == "hockney":
        return np.asarray(p["alpha"] + (p["beta"] + p.get("gamma", 0.0)) * m)
    if fit.model == "loggp":
        return np.asarray(p["L_plus_2o"] + np.maximum(m - 1, 0) * p["G"])
    if fit.model == "plogp":
        coef = np.array([p["L"], *(p[f"slope_{i}"] for i in range(len(fit.breakpoints) + 1))])
        return np.asarray(cm._pieces(m, tuple(float(b) for b in fit.breakpoints)) @ coef)
    raise AnalysisError(f"no prediction for model {fit.model!r}; known: {', '.join(MODELS)}")


_FITS: dict[str, Callable[[np.ndarray, np.ndarray], cm.ModelFit]] = {
    "hockney": cm.fit_hockney, "loggp": cm.fit_loggp, "plogp": cm.fit_plogp}


def choose_model(sizes: np.ndarray, times: np.ndarray,
                 models: Sequence[str] = MODELS) -> ModelChoice:
    """The model with the least leave-one-size-out relative error on the curve (sizes, times)."""
    m = np.asarray(sizes, dtype=np.float64).ravel()
    t = np.asarray(times, dtype=np.float64).ravel()
    if m.shape != t.shape:
        raise AnalysisError(f"sizes and times differ in length ({m.size} and {t.size})")
    unknown = [x for x in models if x not in _FITS]
    if unknown or not models:
        raise AnalysisError(f"unknown model(s) {', '.join(unknown) or '(none given)'}; choose "
                            f"from {', '.join(MODELS)}")
    distinct = np.unique(m)
    if distinct.size < 5:
        raise AnalysisError(f"choosing a model by held-out sizes needs at least 5 distinct "
                            f"message sizes, got {distinct.size}; measure more sizes")
    errors: dict[str, float] = {}
    for name in models:
        missed = []
        for size in distinct:
            keep = m != size
            fit = _FITS[name](m[keep], t[keep])
            missed.extend(((predict(fit, m[~keep]) - t[~keep]) / t[~keep]).tolist())
        errors[name] = float(np.sqrt(np.mean(np.square(missed))))
    least = min(errors.values())
    best = next(x for x in models if errors[x] <= least + max(TIE, TIE * least))
    return ModelChoice(best=best, errors=MappingProxyType(errors), held_out=int(distinct.size))
