"""How well the headline model predicts runs it was not fitted on (issue 52).

The non-stationary model's aₖ and sₖ are fitted on one run's iterations; compared with that
same run's KSPSolve it measures how well a run describes itself (an in-sample fit). Here the
model fitted on one run predicts *another* run, only where the model claims validity:

* **held-out repetition**: another run of the same configuration (every attribute of
  :data:`~ksptrace.trace.model.CONFIG_KEYS` and P equal), whose N may differ (another node
  count);
* **same n/P at another P**: a configuration of the same problem, solver, preconditioner and K
  with the same local size n/P at another P, through E[max of N] with the target's N (a standard
  method's Σₖ E[max of N] of U(aₖ, aₖ + sₖ); a pipelined one's Σₖ μₖ does not depend on N).

Another n/P is not predicted: the work of an iteration changes with the local size, and no
per-iteration work model is fitted. An error beyond ±:data:`ABSURD_PCT` % is no prediction but a
failure, reported with its reason and without a number (:mod:`.plausible`).

Pure: analyses in, frozen dataclasses out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.findings import file_name, fmt_pct, fmt_time, n_of
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats import models
from ksptrace.studies.variability.stats.plausible import ABSURD_PCT, plausible_pct
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS

REPETITION = "held-out repetition"
SAME_LOCAL_SIZE = "same n/P at another P"
IN_SAMPLE = "in-sample fit"
MAX_PER_CONFIGURATION = 6
"""At most this many runs of one configuration enter the repetition pairs (R·(R−1) pairs)."""
_KIND_KEYS = tuple(k for k in CONFIG_KEYS if k not in ("n", "nprocs", "ranks_per_node"))
"""What two configurations share to be of one kind: all but n and P (and the ranks per node,
which follow P on one node)."""


@dataclass(frozen=True)
class HeldOut:
    """The headline model fitted on ``fitted_on`` predicting the run ``predicts``."""

    basis: str
    """:data:`REPETITION` or :data:`SAME_LOCAL_SIZE`."""
    fitted_on: str
    predicts: str
    predicted: float
    measured: float
    """The target's measured time (KSPSolve without its set-up when recorded)."""
    error_pct: float | None
    """Signed error in per cent; None when the prediction failed (see ``why``)."""
    why: str = ""


def _config(a: TraceAnalysis) -> tuple[str, ...]:
    attrs = dict(a.attrs)
    return (*(str(attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in CONFIG_KEYS), str(a.nprocs))


def same_kind(a: TraceAnalysis, b: TraceAnalysis) -> bool:
    """Whether ``a`` and ``b`` differ at most in n and P (problem, solver, preconditioner, K,
    restart, noise, ... equal)."""
    return _kind(a) == _kind(b)


def _kind(a: TraceAnalysis) -> tuple[str, ...]:
    attrs = dict(a.attrs)
    return tuple(str(attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in _KIND_KEYS)


def predict_from(src: TraceAnalysis, dst: TraceAnalysis) -> float | None:
    """The headline model fitted on ``src``'s iterations for ``dst``'s N (None when the two
    recorded different numbers of iterations: the model is per iteration)."""
    if src.iterations != dst.iterations:
        return None
    if dst.pipelined:
        return src.nonstationary.pipelined
    if dst.count == src.count:
        return src.nonstationary.standard
    return models.nonstationary_model(src.uniform, dst.count).standard


def _held_out(basis: str, src: TraceAnalysis, dst: TraceAnalysis) -> HeldOut | None:
    value = predict_from(src, dst)
    if value is None or not dst.measured > 0:
        return None
    pct = 100.0 * (value - dst.measured) / dst.measured
    shown = plausible_pct(pct)
    why = "" if shown is not None else (
        f"failed: off by more than {ABSURD_PCT:.0f} % (the model fitted on {file_name(src)} "
        f"does not describe {file_name(dst)})")
    return HeldOut(basis, file_name(src), file_name(dst), value, dst.measured, shown, why)


def repetition_predictions(analyses: Sequence[TraceAnalysis]) -> tuple[HeldOut, ...]:
    """Each run of a repeated configuration predicted by the model of each other run of it."""
    groups: dict[tuple[str, ...], list[TraceAnalysis]] = {}
    for a in analyses:
        groups.setdefault(_config(a), []).append(a)
    out = []
    for runs in groups.values():
        chosen = runs[:MAX_PER_CONFIGURATION]
        for src in chosen:
            for dst in chosen:
                if dst is not src and (h := _held_out(REPETITION, src, dst)) is not None:
                    out.append(h)
    return tuple(out)


def local_size(a: TraceAnalysis) -> float | None:
    n = n_of(a)
    return None if n is None else n / a.nprocs


def same_local_size_predictions(analyses: Sequence[TraceAnalysis]) -> tuple[HeldOut, ...]:
    """Each configuration predicted from each other one of the same kind and n/P at another P
    (the first run of each configuration stands for it)."""
    first: dict[tuple[str, ...], TraceAnalysis] = {}
    for a in analyses:
        first.setdefault(_config(a), a)
    reps = list(first.values())
    out = []
    for src in reps:
        for dst in reps:
            same = (_kind(src) == _kind(dst) and src.nprocs != dst.nprocs
                    and local_size(src) is not None and local_size(src) == local_size(dst))
            if same and (h := _held_out(SAME_LOCAL_SIZE, src, dst)) is not None:
                out.append(h)
    return tuple(out)


def other_size_pairs(analyses: Sequence[TraceAnalysis]) -> int:
    """Pairs of configurations of one kind whose n/P differ: not predicted."""
    first: dict[tuple[str, ...], TraceAnalysis] = {}
    for a in analyses:
        first.setdefault(_config(a), a)
    reps = list(first.values())
    return sum(1 for s in reps for d in reps
               if s is not d and _kind(s) == _kind(d) and local_size(s) != local_size(d))


def held_out(analyses: Sequence[TraceAnalysis]) -> tuple[HeldOut, ...]:
    """Every out-of-sample prediction the data allow, repetitions first."""
    return (*repetition_predictions(analyses), *same_local_size_predictions(analyses))


def heldout_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Every out-of-sample prediction of the headline model, with its measured error (or why
    it failed); the CSV is ``heldout.csv``."""
    found = held_out(analyses)
    rows = [{"basis": h.basis, "fitted_on": h.fitted_on, "predicts": h.predicts,
             "predicted_s": None if h.error_pct is None else h.predicted,
             "measured_s": h.measured, "err_pct": h.error_pct, "status": h.why or "ok"}
            for h in found]
    shown = [{"basis": h.basis, "fitted on": h.fitted_on, "predicts": h.predicts,
              "predicted": h.why if h.error_pct is None else fmt_time(h.predicted),
              "measured": fmt_time(h.measured), "error": fmt_pct(h.error_pct)}
             for h in found]
    skipped = other_size_pairs(analyses)
    notes = ["The non-stationary model (chosen in advance) fitted on one run predicts another "
             "run it was not fitted on: a repetition of the same configuration, or the same "
             "local size n/P at another P (through E[max of N] with the target's N)."]
    if skipped:
        notes.append(f"{skipped} pairs of configurations with another n/P are not predicted: "
                     "the work of an iteration changes with the local size, and no "
                     "per-iteration work model is fitted.")
    if not found:
        notes.append("No run can be predicted out of sample: no configuration was repeated "
                     "and no two share n/P at different P.")
    return Table(
        name="heldout",
        title="Out of sample: one run's model predicts another run",
        frame=Rows.of(rows, columns=["basis", "fitted_on", "predicts", "predicted_s",
                                     "measured_s", "err_pct", "status"]),
        display=Rows.of(shown, columns=["basis", "fitted on", "predicts", "predicted",
                                        "measured", "error"]),
        notes=tuple(notes))
