"""The out-of-sample predictions (:mod:`.heldout`) beside their naive baselines: ``heldout.csv``
and Q3's sentences, each accuracy with the baseline's and the skill score (issue 63).

The baselines: for a repetition, persistence (the other repetition's measured time); for the
same n/P at another P, the source P's measured time and, towards a larger P, that time scaled
by the per-iteration growth measured from a smaller P (:func:`.heldout.growth_scaled`). When the
model's skill is below :data:`~..stats.skill.MIN_SKILL` the sentence says it is "no better
than" the baseline. Pure: analyses in, tables and sentences out.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table
from ksptrace.studies.variability.conclusions.findings import fmt_pct, fmt_time
from ksptrace.studies.variability.conclusions.heldout import (
    REPETITION,
    HeldOut,
    against_baseline,
    held_out,
    other_size_pairs,
    p1_sources,
)
from ksptrace.studies.variability.conclusions.larger_p import LARGER_P, larger_p_predictions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.plausible import ABSURD_PCT
from ksptrace.studies.variability.stats.skill import MIN_SKILL, skill

PERSISTENCE = "persistence (the source run's measured time)"
SCALED = "the smaller-P time scaled by the measured per-iteration growth"
TAIL_NOTE = "; tail-miss: the source's model missed its held-out half's q99 by more than 25 %"
P1_NOTE = ("P = 1 runs are no source at the same n/P: their sₖ = 0, so E[max of N] from them is "
           "their own measured time, the baseline itself")


def _skill_cell(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def heldout_table(analyses: Sequence[TraceAnalysis]) -> Table:
    """Every out-of-sample prediction of the headline model with its error, the baselines'
    errors on the same target and the skill; the CSV is ``heldout.csv``."""
    found = held_out(analyses)
    rows = [{"basis": h.basis, "fitted_on": h.fitted_on, "predicts": h.predicts,
             "predicted_s": None if h.error_pct is None else h.predicted,
             "measured_s": h.measured, "err_pct": h.error_pct,
             "baseline_s": h.baseline, "err_pct_baseline": h.baseline_error_pct,
             "skill": h.skill, "scaled_baseline_s": h.scaled,
             "err_pct_scaled_baseline": h.scaled_error_pct, "skill_scaled": h.scaled_skill,
             "status": h.why or "ok"} for h in found]
    larger = larger_p_predictions(analyses)
    rows += [{"basis": LARGER_P, "fitted_on": h.fitted_on, "predicts": h.predicts,
              "predicted_s": h.predicted, "measured_s": h.measured, "err_pct": h.error_pct,
              "baseline_s": h.baseline, "err_pct_baseline": h.baseline_error_pct,
              "skill": h.skill, "scaled_baseline_s": h.scaled,
              "err_pct_scaled_baseline": h.scaled_error_pct, "skill_scaled": h.scaled_skill,
              "status": "ok" + (TAIL_NOTE if h.tail_flagged else "")} for h in larger]
    shown = [{"basis": h.basis, "fitted on": h.fitted_on, "predicts": h.predicts,
              "predicted": h.why if h.error_pct is None else fmt_time(h.predicted),
              "measured": fmt_time(h.measured), "error": fmt_pct(h.error_pct),
              "persistence error": fmt_pct(h.baseline_error_pct), "skill": _skill_cell(h.skill),
              "scaled-baseline error": fmt_pct(h.scaled_error_pct)}
             for h in found]
    shown += [{"basis": LARGER_P, "fitted on": h.fitted_on, "predicts": h.predicts,
               "predicted": f"{fmt_time(h.predicted)} ± {fmt_time(h.se)}",
               "measured": fmt_time(h.measured), "error": fmt_pct(h.error_pct)
               + (" (tail-miss)" if h.tail_flagged else ""),
               "persistence error": fmt_pct(h.baseline_error_pct), "skill": _skill_cell(h.skill),
               "scaled-baseline error": fmt_pct(h.scaled_error_pct)} for h in larger]
    skipped = other_size_pairs(analyses)
    notes = ["The non-stationary model (chosen in advance) fitted on one run predicts another "
             "run it was not fitted on: a repetition of the same configuration, or the same "
             "local size n/P at another P (through E[max of N] with the target's N). Beside "
             f"it, the baselines on the same target: {PERSISTENCE}, and towards a larger P "
             f"{SCALED} (from the nearest smaller P). Skill = 1 − |error| / |baseline error|: "
             f"0 is no better than the baseline, 1 exact; Q3 calls a skill (over its "
             f"predictions) below {MIN_SKILL:.2f} no better than the baseline."]
    if larger:
        notes.append(f"{LARGER_P}: the bulk-plus-detours model of a source run's per-rank "
                     "iteration times (docs/analysis.md) predicts a standard method's KSPSolve at "
                     "a larger P with the same n/P as K·E[max of N], ± its standard error from "
                     "the detour size's; tail-miss: the source's model, fitted on a random half "
                     "of its iterations, missed the other half's q99 by more than 25 %.")
    if p1_sources(analyses):
        notes.append(P1_NOTE + ".")
    if skipped:
        notes.append(f"{skipped} pairs of configurations with another n/P are not predicted: "
                     "the work of an iteration changes with the local size, and no "
                     "per-iteration work model is fitted.")
    if not found and not larger:
        notes.append("No run can be predicted out of sample: no configuration was repeated "
                     "and no two share n/P at different P.")
    return Table(
        name="heldout",
        title="Out of sample: one run's model predicts another run, beside naive baselines",
        frame=Rows.of(rows, columns=["basis", "fitted_on", "predicts", "predicted_s",
                                     "measured_s", "err_pct", "baseline_s", "err_pct_baseline",
                                     "skill", "scaled_baseline_s", "err_pct_scaled_baseline",
                                     "skill_scaled", "status"]),
        display=Rows.of(shown, columns=["basis", "fitted on", "predicts", "predicted",
                                        "measured", "error", "persistence error", "skill",
                                        "scaled-baseline error"]),
        notes=tuple(notes))


def _against(found: Sequence[HeldOut], scaled: bool, name: str) -> str | None:
    """The predictions against one baseline (:func:`..heldout.against_baseline`)."""
    return against_baseline([(h.error_pct, h.scaled_error_pct if scaled else
                              h.baseline_error_pct) for h in found], name)


def heldout_sentence(found: Sequence[HeldOut], where: str, clause: str) -> str:
    """Q3's sentence on one basis: the accuracy, then against each baseline, with the skill."""
    ok = [abs(h.error_pct) for h in found if h.error_pct is not None]
    signed = [h.error_pct for h in found if h.error_pct is not None]
    failed = len(found) - len(ok)
    text = (f"Out of sample, {where} ({clause}), the non-stationary model fitted on one run "
            f"predicts another run's time")
    if ok:
        close = sum(1 for e in ok if e <= 10.0)
        text += (f" within 10 % in {close} of {len(found)}; median |error| "
                 f"{statistics.median(ok):.1f} % ({fmt_pct(min(signed))} to "
                 f"{fmt_pct(max(signed))})")
    if failed:
        text += (f"{';' if ok else ':'} {failed} of {len(found)} failed (off by more than "
                 f"{ABSURD_PCT:.0f} %)")
    repetition = all(h.basis == REPETITION for h in found)
    persistence = ("persistence, the other repetition's measured time" if repetition
                   else "persistence, the source P's measured time")
    against = [c for c in (_against(found, False, persistence),
                           _against(found, True, SCALED)) if c is not None]
    if against:
        text += ": " + "; ".join(against)
    if repetition and against and against[0].startswith("no better"):
        text += ", so this measures run-to-run reproducibility, not the model"
    return text + "."


class _Scored(Protocol):
    @property
    def error_pct(self) -> float | None: ...

    @property
    def baseline_error_pct(self) -> float | None: ...


def heldout_short(groups: Sequence[tuple[str, str, Sequence[_Scored]]]) -> str:
    """Q3 for the first screen, from the first of ``groups`` (what is predicted, the
    persistence baseline's name, the predictions) that holds a prediction: how many within
    10 % and the skill against persistence ("" when none does)."""
    for what, baseline, found in groups:
        both = [(h.error_pct, h.baseline_error_pct) for h in found
                if h.error_pct is not None and h.baseline_error_pct is not None]
        if not found:
            continue
        close = sum(1 for h in found if h.error_pct is not None and abs(h.error_pct) <= 10.0)
        text = f"Out of sample ({what}), the model predicts within 10 % in {close} of {len(found)}"
        failed = sum(1 for h in found if h.error_pct is None)
        text += f" ({failed} failed: off by more than {ABSURD_PCT:.0f} %)" if failed else ""
        if both:
            s = skill(np.array([m for m, _ in both]), np.array([b for _, b in both]))
            verdict = "better than" if s.beats else "no better than"
            score = "" if s.score is None else f", skill {s.score:+.2f}".replace("-", "−")
            text += f": {verdict} {baseline}{score}"
        return text + "."
    return ""
