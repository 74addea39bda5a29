"""The flags of the per-trace analysis: a result that can be computed but must not be taken at
face value carries a :class:`Flag` (code and one sentence) instead of being dropped or shown
silently. One function per kind: the mean of a fit pulled by outliers, collapsed or meanless
parameter fits, N = 1, predictions far off KSPSolve, a loaded machine, a running event log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ksptrace.studies.numbers import seconds_text
from ksptrace.studies.variability.stats import models, montecarlo
from ksptrace.studies.variability.stats.halves import TAIL_FLAG, Tails
from ksptrace.studies.variability.stats.outliers import outliers, outliers_explain_mean
from ksptrace.studies.variability.stats.plausible import ABSURD_PCT, is_absurd
from ksptrace.trace.model import FOREIGN_LOAD_LIMIT, Trace


@dataclass(frozen=True)
class Flag:
    """A result a reader must not take at face value, and why.

    ``code`` is a stable id: "prediction-far" (a model or the Monte Carlo is more than 50 % off
    the measured KSPSolve), "fit-mean-outliers" (a converged fit whose mean differs from the
    sample mean because of outliers), "fit-mean-far" (a converged fit whose mean differs from
    the sample mean for no reason found), "jsu-collapsed" (a Johnson S_U fit of a_k or s_k
    collapsed to its normal limit), "one-node" (N = 1: every model is K times the mean),
    "infinite-mean" (a fitted family with no finite mean: no E[max of N]), "machine-loaded"
    (other processes used more than 10 % of the node's CPUs during the solve), "log-on" (PETSc's
    full event log ran during the timed solve), "tail-miss" (a model refitted on a random half
    of the iterations whose 99th percentile misses the other half's by more than 25 %).
    """

    code: str
    subject: str
    """What it is about: "Monte Carlo", "stationary model (lognorm)", "JSU fit of s_k"."""
    message: str
    """One sentence with the numbers and the reason where known."""


FIT_MEAN_TOLERANCE = 0.5
"""A fitted family whose mean is off the sample mean by more than this fraction is flagged."""


PREDICTION_TOLERANCE = 0.5
"""A model or Monte Carlo prediction off the measured KSPSolve by more than this is flagged."""


def _t(seconds: float) -> str:
    """A time in the unit that suits it, 3 significant digits: '28 ms', '398 µs'."""
    text = seconds_text(seconds, 3)
    if text is not None or not np.isfinite(seconds):
        return text or f"{seconds} s"
    return f"{seconds * 1e9:.0f} ns"  # the clock's resolution: no digit below 1 ns


def _mean_flag(
    subject: str, name: str, fitted: float, data: np.ndarray, reasons: dict[str, str],
    sample_mean: float | None = None,
) -> Flag | None:
    """A flag when a converged fit's mean is far from the sample mean, with the reason if known.

    Records in ``reasons`` the short reason it gives a prediction that is far off.
    ``sample_mean``: ``np.mean(data)``, if the caller has it (one pass for several fits).
    """
    sample = float(np.mean(data)) if sample_mean is None else sample_mean
    if abs(fitted - sample) <= FIT_MEAN_TOLERANCE * abs(sample):
        return None
    side = "below" if fitted < sample else "above"
    if sample != 0 and is_absurd(100.0 * (fitted / sample - 1)):
        # a failed fit: no number of it is printed (issue 52)
        off = (f"more than {1 + ABSURD_PCT / 100:.0f}× the sample mean {_t(sample)}"
               if fitted > 0 else f"below zero, against the sample mean {_t(sample)}")
        gap = f"the fit failed: its mean is {off}"
    else:
        off = (
            f"{abs(fitted / sample - 1):.0%} {side} the sample mean {_t(sample)}"
            if sample != 0
            else f"{side} the sample mean 0 s"
        )
        gap = f"the fitted mean {_t(fitted)} is {off}"
    found = outliers_explain_mean(data, fitted, FIT_MEAN_TOLERANCE)
    if found is not None:
        where = f"{found.count} of {found.total} values from {_t(found.low)} to {_t(found.high)}"
        reasons[subject] = (
            f"{name} follows the bulk (mean {_t(fitted)}) while outliers ({where}) pull the "
            f"sample mean to {_t(sample)}"
        )
        return Flag(
            "fit-mean-outliers",
            subject,
            f"{gap} because of outliers ({where}); without them the sample mean is "
            f"{_t(found.clean_mean)}, which the fit follows",
        )
    reasons[subject] = (f"{name} failed: its mean is {off}" if gap.startswith("the fit failed")
                        else f"the mean of {name}, {_t(fitted)}, is {off}")
    return Flag("fit-mean-far", subject, f"{gap}, and outliers do not explain it")


def _parameter_flags(
    params: montecarlo.ParameterFits, fits: models.UniformFits, reasons: dict[str, str]
) -> list[Flag]:
    """Flags on the Johnson S_U fits of a_k and s_k: collapsed, or mean far from the data."""
    flags = []
    for what, jsu, normal, data in (
        ("a_k", params.lower, params.lower_normal, fits.lower),
        ("s_k", params.span, params.span_normal, fits.span),
    ):
        subject = f"JSU fit of {what}"
        if normal is not None:
            reasons[subject] = (
                f"the Johnson S_U fit of {what} collapsed to its normal limit "
                f"(a = {jsu.a:.3g}, loc = {_t(jsu.loc)}) and {what} was drawn from a normal fit"
            )
            flags.append(
                Flag(
                    "jsu-collapsed",
                    subject,
                    f"the Johnson S_U fit of {what} collapsed to its normal limit "
                    f"(a = {jsu.a:.3g}, b = {jsu.b:.3g}, loc = {_t(jsu.loc)}, "
                    f"scale = {_t(jsu.scale)} for data of mean {_t(float(np.mean(data)))}); "
                    f"the Monte Carlo draws {what} from the normal fit (mean "
                    f"{_t(normal.mean)}, std {_t(normal.std)}) instead, cut at zero",
                )
            )
            continue
        flag = _mean_flag(
            subject, f"the Johnson S_U fit of {what}", models.mean_of(jsu.frozen()), data, reasons
        )
        if flag is not None:
            flags.append(
                replace(flag, message=f"{flag.message}; the simulated runtime is unreliable")
            )
    return flags


def _count_flags(nprocs: int, count: float, reasons: dict[str, str]) -> list[Flag]:
    """The one-node flag: with N = 1 every model is K times the mean."""
    if count != 1:
        return []
    if nprocs == 1:
        why = "P = 1"
    else:
        why = (
            f"all {nprocs} ranks share one node and N counts nodes; --independent ranks "
            "makes N = P"
        )
    if nprocs > 1:
        reasons["N = 1"] = (
            "with N = 1 the model is K times the mean and misses the wait for the slowest rank"
        )
    return [
        Flag(
            "one-node",
            "models",
            f"N = 1 ({why}): E[max of N] is the mean, so every stationary model is K times the "
            "mean, the non-stationary Ê[T] equals Ê[T'], both bounds equal K mu and the Monte "
            "Carlo draws one rank; no model shows the wait for the slowest rank",
        )
    ]


def _data_outliers(kept: np.ndarray) -> str | None:
    """A reason when the kept T_p^k hold outliers, for a far prediction with no other reason."""
    found = outliers(kept)
    if found is None:
        return None
    return (
        f"the data hold outliers ({found.count} of {found.total} values from {_t(found.low)} "
        f"to {_t(found.high)}; mean {_t(found.sample_mean)}, {_t(found.clean_mean)} without "
        "them)"
    )


class Predictions(Protocol):
    """What :func:`_prediction_flags` reads of a per-trace analysis."""

    @property
    def measured(self) -> float: ...
    @property
    def pipelined(self) -> bool: ...
    @property
    def nonstationary(self) -> models.NonStationaryModel: ...
    @property
    def stationary(self) -> Sequence[models.StationaryModel]: ...
    @property
    def simulated_raw(self) -> float | None: ...


def _prediction_flags(
    a: Predictions, reasons: dict[str, str], kept: np.ndarray
) -> list[Flag]:
    """A flag for every model or Monte Carlo prediction more than 50 % off KSPSolve.

    The reason is that of the flags the prediction stems from (a fit pulled by outliers, a
    collapsed S_U fit, N = 1); failing those, the outliers of the data when there are any.
    """
    if not a.measured > 0:
        return []
    fallback: list[str | None] = []
    lockstep = () if a.pipelined else ("N = 1",)
    candidates: list[tuple[str, float | None, tuple[str, ...]]] = [
        (
            f"stationary model ({m.family})",
            m.pipelined if a.pipelined else m.standard,
            (f"stationary model ({m.family})", *lockstep),
        )
        for m in a.stationary
    ]
    candidates.append(
        (
            "non-stationary model",
            a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard,
            lockstep,
        )
    )
    candidates.append(
        ("Monte Carlo", a.simulated_raw, ("JSU fit of a_k", "JSU fit of s_k", *lockstep))
    )
    out = []
    for subject, value, related in candidates:
        if value is None or abs(value - a.measured) <= PREDICTION_TOLERANCE * a.measured:
            continue
        known = [reasons[r] for r in related if r in reasons]
        if not known:
            if not fallback:
                fallback.append(_data_outliers(kept))
            known = [r for r in fallback if r is not None]
        why = "; ".join(known) if known else "no known reason was detected"
        out.append(Flag("prediction-far", subject, _far(value, a.measured, why)))
    return out


def _load_flags(trace: Trace) -> list[Flag]:
    """The machine-loaded flag: other processes used the node's CPUs during the solve."""
    share = trace.attr("foreign_cpu_share")
    if not isinstance(share, int | float) or isinstance(share, bool):
        return []
    if not share > FOREIGN_LOAD_LIMIT:
        return []
    seconds = trace.attr("foreign_cpu_seconds")
    spent = f" ({seconds:.2f} CPU s)" if isinstance(seconds, int | float) else ""
    return [
        Flag(
            "machine-loaded",
            "measurement",
            f"other processes used {share:.0%} of node {trace.attr('foreign_cpu_node', 0)}'s "
            f"CPU capacity during the solve{spent}: the timings include their interference; "
            "rerun on a quiet machine before comparing",
        )
    ]


def _log_flags(trace: Trace) -> list[Flag]:
    """The log-on flag: PETSc's full event log timed every event of the timed solve."""
    log = trace.attr("event_log")
    cost = ("about 0.9 us more per iteration, 10 % at 10^3 unknowns per rank")
    if log is None and trace.attr("reductions_blocking") is not None:
        return [Flag("log-on", "measurement",
                     f"written by an older ksptrace that ran PETSc's full event log during "
                     f"the timed solve: {cost}; rerun to measure the solver alone")]
    if not str(log or "").startswith("all"):
        return []
    return [Flag("log-on", "measurement",
                 f"PETSc's full event log ran during the timed solve (-log_view, or the "
                 f"program's own log): {cost}; rerun without -log_view to measure the solver "
                 "alone")]


def condition_flags(trace: Trace) -> list[Flag]:
    """The flags of the run's conditions, read from the trace alone (machine load, event log):
    the same the analysis gives the run, for a command that reads traces without analysing
    them (``ksptrace decide``)."""
    return [*_load_flags(trace), *_log_flags(trace)]


class Flagged(Protocol):
    """What :func:`apriori_flag` reads of the source analysis: its flags."""

    @property
    def flags(self) -> Sequence[Flag]: ...


def apriori_flag(source: Flagged, prediction: montecarlo.Prediction) -> Flag | None:
    """A prediction-far flag for an a-priori Monte Carlo prediction fitted on ``source``.

    Its reason is the flags on the source's Johnson S_U fits (collapsed, pulled by outliers, far
    from the data) when it has any. None when the prediction is within 50 % of KSPSolve.
    """
    if not prediction.measured > 0:
        return None
    err = prediction.relative_error
    if abs(err) <= PREDICTION_TOLERANCE:
        return None
    related = [f for f in source.flags if f.subject in ("JSU fit of a_k", "JSU fit of s_k")]
    why = "; ".join(f"the source's {f.subject} is flagged {f.code}" for f in related)
    return Flag(
        "prediction-far",
        f"a priori Monte Carlo from {prediction.source}",
        _far(prediction.simulated, prediction.measured, why or "no known reason was detected"),
    )


def _far(value: float, measured: float, why: str) -> str:
    """A far prediction against the measurement: its signed error, or, beyond ±ABSURD_PCT %,
    "failed" without a number (issue 52)."""
    if is_absurd(100.0 * (value / measured - 1.0)):
        side = "below zero" if value < 0 else f"more than {1 + ABSURD_PCT / 100:.0f}×"
        return f"failed: {side} against the measured KSPSolve {_t(measured)}: {why}"
    return (f"{_t(value)} against the measured KSPSolve {_t(measured)} "
            f"({value / measured - 1.0:+.0%}): {why}")


def _miss(miss: float) -> str:
    """A q99 miss in per cent, or "more than 1000 %" (never an absurd figure, issue 52)."""
    pct = 100.0 * miss
    return f"{pct:+.0f} %" if abs(pct) <= ABSURD_PCT else f"more than {ABSURD_PCT:.0f} %"


def tail_flags(tails: Tails) -> list[Flag]:
    """"tail-miss" for the best family and for the bulk-plus-detours model when, fitted on a
    random half of the iterations, its 99th percentile misses the other half's by more than
    :data:`TAIL_FLAG` (issue 63: a maximum of the likelihood that does not describe the tail
    E[max of N] depends on)."""
    out = []
    h, c = tails.best_fit, tails.detour_check
    if h is not None and h.flagged:
        out.append(Flag("tail-miss", f"bulk fit ({h.family})",
                        f"refitted on a random half of the iterations, its 99th percentile "
                        f"{_t(h.model_q99)} misses the other half's {_t(h.data_q99)} by "
                        f"{_miss(h.miss)} (more than {100 * TAIL_FLAG:.0f} %): it does "
                        f"not describe the tail that E[max of N] depends on (held-out KS "
                        f"distance {h.ks:.3f}, {h.ks_fitted:.3f} on its own half)"))
    if c is not None and c.flagged:
        out.append(Flag("tail-miss", "bulk-plus-detours model",
                        f"fitted on a random half of the iterations, its 99th percentile "
                        f"{_t(c.model_q99)} misses the other half's {_t(c.data_q99)} by "
                        f"{_miss(c.miss)} (more than {100 * TAIL_FLAG:.0f} %): its "
                        "predictions at a larger P rest on a tail it does not hold"))
    return out
