"""The stationary runtime model of each verified fit (the paper's K mu and E[max of N]
bounds), with the fits whose model cannot stand left out, each with its reason: a fit that is
not a verified maximum, a family without a finite mean, a fitted mean outside the data."""

from __future__ import annotations

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.run.flags import Flag, _mean_flag
from ksptrace.studies.variability.stats import models
from ksptrace.studies.variability.stats.fitting import FitRanking


def stationary_models(
    bulk: FitRanking,
    kept: np.ndarray,
    k: int,
    count: float,
    notes: list[str],
    flags: list[Flag],
    reasons: dict[str, str],
) -> tuple[models.StationaryModel, ...]:
    """A stationary model per converged fit; those whose mean is far from the data flagged.

    Only fits that did not converge (a non-finite model, or a mean both far from the sample mean
    and outside the data's range) are left out. A fit that follows the bulk while outliers pull
    the sample mean stays, flagged, as the paper keeps such rows.
    """
    stationary = []
    lo, hi = float(kept.min()), float(kept.max())
    mean = float(np.mean(kept))  # every fit's mean is checked against it: one pass
    for fit in bulk.fits:
        if not fit.ok:  # never a model from a fit that is not a verified maximum
            notes.append(f"stationary model with {fit.name} left out: its fit is {fit.status} "
                         f"({fit.reason})")
            continue
        subject = f"stationary model ({fit.name})"
        dist = fit.frozen()
        try:
            model = models.stationary_model(fit.name, dist, k, count)
        except AnalysisError as exc:
            if models.has_finite_mean(dist):
                notes.append(f"stationary model with {fit.name}: {exc}")
                continue
            shapes = ", ".join(f"{p:.3g}" for p in fit.params[:-2])
            flags.append(
                Flag(
                    "infinite-mean",
                    subject,
                    f"the {fit.name} fit (shape {shapes}) has no finite mean, so E[max of N] "
                    "and K mu are infinite: no model from this family",
                )
            )
            continue
        fitted_mean = model.mean
        found: dict[str, str] = {}
        flag = _mean_flag(subject, f"the {fit.name} fit", fitted_mean, kept, found, mean)
        inside = lo <= fitted_mean <= hi
        if not np.isfinite(model.standard) or (flag is not None and not inside):
            notes.append(
                f"stationary model with {fit.name} left out: the fitted mean "
                f"{fitted_mean:.4g} s lies outside the data's range {lo:.4g}..{hi:.4g} s "
                "(the fit did not converge to the data)"
            )
            continue
        if flag is not None:
            flags.append(flag)
            reasons.update(found)
        stationary.append(model)
    return tuple(stationary)
