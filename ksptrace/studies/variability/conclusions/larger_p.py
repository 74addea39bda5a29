"""The prediction the paper is about: KSPSolve at a larger P from runs at a smaller P (issue 63).

The bulk-plus-detours model (:mod:`..stats.detours`) of a source run's kept iteration times
predicts a run of the same kind and the same local size n/P at a larger P as K·E[max of N]
with the target's K and N. It holds in the tail, which the paper's fitted families do not, and
unlike the uniform fits of aₖ and sₖ it does not need P ≥ 2 (a P = 1 run's rank has detours
too). Only standard methods are predicted: a pipelined method's time is no Σₖ maxₚ.

Beside it, the baselines of :mod:`.heldout` on the same target: the source P's measured time
(persistence) and that time scaled by the per-iteration growth measured from a still smaller P.
Each prediction carries its standard error (the detour size's, :meth:`DetourModel.
expected_max_se`) and whether the source's model missed its held-out-half q99 by more than
25 %. Pure: analyses in, frozen dataclasses and sentences out.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace.studies.variability.conclusions.findings import file_name, fmt_pct
from ksptrace.studies.variability.conclusions.heldout import (
    against_baseline,
    configurations,
    growth_scaled,
    same_size,
)
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.plausible import plausible_pct
from ksptrace.studies.variability.stats.skill import pair_skill

LARGER_P = "larger P (bulk plus detours)"
SCALED_NAME = "the smaller-P time scaled by the measured per-iteration growth"


@dataclass(frozen=True)
class LargerP:
    """One source run's bulk-plus-detours model predicting a run at a larger P."""

    fitted_on: str
    predicts: str
    p_from: int
    p_to: int
    predicted: float
    se: float
    """The prediction's standard error (s), from the detour size's."""
    measured: float
    error_pct: float | None
    baseline: float
    baseline_error_pct: float | None
    scaled: float | None
    scaled_error_pct: float | None
    tail_flagged: bool
    """The source's model missed its held-out half's q99 by more than 25 %."""

    @property
    def skill(self) -> float | None:
        return pair_skill(self.error_pct, self.baseline_error_pct)

    @property
    def scaled_skill(self) -> float | None:
        return pair_skill(self.error_pct, self.scaled_error_pct)


def _pct(value: float | None, measured: float) -> float | None:
    return None if value is None else plausible_pct(100.0 * (value - measured) / measured)


def predict_larger(src: TraceAnalysis, dst: TraceAnalysis) -> tuple[float, float] | None:
    """K·E[max of N] for ``dst`` from ``src``'s bulk-plus-detours model, and its standard
    error; None without a model, for a pipelined method or another K."""
    model = None if src.tails is None else src.tails.detours
    if model is None or dst.pipelined or src.iterations != dst.iterations:
        return None
    k, n = dst.iterations, max(1, int(dst.count))
    return k * model.expected_max(n), k * model.expected_max_se(n)


def larger_p_predictions(analyses: Sequence[TraceAnalysis],
                         targets_from: Sequence[TraceAnalysis] | None = None
                         ) -> tuple[LargerP, ...]:
    """Every run predicted from every run of the same kind and n/P at a smaller P; the targets
    from ``targets_from`` when given (Q3: the clean runs predict every run without injected
    noise, a loaded target named as such)."""
    configs = configurations(analyses)
    later = configs if targets_from is None else configurations(targets_from)
    out = []
    for sources in configs:
        for targets in later:
            if targets[0].nprocs <= sources[0].nprocs or not same_size(sources[0], targets[0]):
                continue
            for src in sources:
                for dst in targets:
                    got = predict_larger(src, dst)
                    if got is None or not dst.measured > 0:
                        continue
                    scaled = growth_scaled(src, dst, configs)
                    check = None if src.tails is None else src.tails.detour_check
                    out.append(LargerP(
                        file_name(src), file_name(dst), src.nprocs, dst.nprocs, got[0],
                        got[1], dst.measured, _pct(got[0], dst.measured), src.measured,
                        _pct(src.measured, dst.measured), scaled,
                        _pct(scaled, dst.measured), check is not None and check.flagged))
    return tuple(out)


def _against(found: Sequence[LargerP], scaled: bool, name: str) -> str | None:
    """The predictions against one baseline (:func:`..heldout.against_baseline`)."""
    return against_baseline([(h.error_pct, h.scaled_error_pct if scaled else
                              h.baseline_error_pct) for h in found], name)


def larger_p_sentence(found: Sequence[LargerP], clause: str, caveated: str = "") -> str:
    """Q3's sentence on the larger-P predictions, against both baselines, with the tail check;
    ``caveated``: the targets' caveats, when some have any ("3 of 8 targets oversubscribed")."""
    ok = [h for h in found if h.error_pct is not None]
    sizes = sorted({h.p_from for h in found}), sorted({h.p_to for h in found})
    text = (f"From runs at a smaller P (P = {', '.join(map(str, sizes[0]))} → "
            f"{', '.join(map(str, sizes[1]))}, the same n/P, standard methods; {clause}"
            f"{'; ' + caveated if caveated else ''}), the "
            "bulk-plus-detours model of the per-rank iteration times predicts KSPSolve")
    if ok:
        errors = [abs(h.error_pct or 0.0) for h in ok]
        text += (f" within 10 % in {sum(1 for e in errors if e <= 10.0)} of {len(found)}; "
                 f"median |error| {statistics.median(errors):.1f} % "
                 f"({fmt_pct(min(h.error_pct or 0.0 for h in ok))} to "
                 f"{fmt_pct(max(h.error_pct or 0.0 for h in ok))})")
    failed = len(found) - len(ok)
    if failed:
        text += f"; {failed} of {len(found)} failed (off by more than 1000 %)"
    against = [c for c in (_against(found, False, "the smaller P's measured time"),
                           _against(found, True, SCALED_NAME)) if c is not None]
    if against:
        text += ": " + "; ".join(against)
    flagged = {h.fitted_on for h in found if h.tail_flagged}
    sources = {h.fitted_on for h in found}
    text += (f". Its tail check (the model fitted on a random half of a source's iterations, "
             f"its q99 against the other half's) missed by more than 25 % and beyond the "
             f"data's sampling error in {len(flagged)} of {len(sources)} source run"
             f"{'s' if len(sources) != 1 else ''}.")
    return text
