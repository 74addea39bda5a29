"""The noise study over analysed runs: each noisy run against the truth its injected noise
implies, and standard against pipelined methods under the same noise (a :class:`StudyResult`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ksptrace.studies.noise.blocks import PairedStudy, paired_studies
from ksptrace.studies.noise.compare import NoiseComparison, NoisePair, compare
from ksptrace.studies.noise.curve import (
    curve_costs,
    curve_figures,
    curve_sentence,
    curves,
)
from ksptrace.studies.noise.perrank import per_rank_ks, per_rank_sentences
from ksptrace.studies.noise.tables import noise_pair_table, noise_table
from ksptrace.studies.numbers import significant
from ksptrace.studies.result import Addendum, Part, StudyResult
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis

INJECTED = ("With injected noise (detours the harness added, not the machine's own; paired "
            "blocks, docs/noise.md):")
NO_PAIRS = ("no standard method and its pipelined variant ran under the same noise with "
            "noise-free runs beside them")


def study(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
          with_figures: bool = True) -> StudyResult | None:
    """None when no run had injected noise."""
    comparison = compare(analyses)
    per_rank = tuple(per_rank_sentences(per_rank_ks(analyses)))
    if not comparison.rows and not per_rank:
        return None
    tables = [noise_table(comparison), noise_pair_table(comparison)] if comparison.rows else []
    tables = [dataclasses.replace(t, notes=(NO_PAIRS,)) if t.empty else t for t in tables]
    # the paired blocks' verdicts lead: they are the design that survives drift (docs/noise.md)
    paired = paired_studies(analyses)
    verdicts = tuple(p.sentence() for p in paired)
    # a sweep of detour lengths is said first as one curve, its lengths' own sentences after
    found = (tuple(curve_costs(c) for c in curves(paired)) + verdicts
             + tuple(noise_sentences(comparison)) + per_rank)
    counts = verdict_counts(paired)
    addenda = (Addendum("pipelined", q2_sentences(paired), "injected noise (paired blocks)",
                        short=f"With injected detours (paired blocks), {counts}."),
               ) if verdicts else ()
    return StudyResult(
        key="noise", title="Injected noise: prediction vs measurement",
        findings=found or (f"{NO_PAIRS[0].upper()}{NO_PAIRS[1:]}, so no slowdowns are compared.",),
        parts=(Part(tables=tuple(tables)),), first=True, addenda=addenda,
        short=f"Noisy minus noise-free KSPSolve, paired in blocks: {counts}." if counts else "")


def verdict_counts(paired: Sequence[PairedStudy]) -> str:
    """The paired designs' verdicts counted per comparison, for the first screen: "GMRES vs
    PGMRES at P = 2: cannot tell in 5 of 6 designs, standard pays less in 1"."""
    groups: dict[str, list[PairedStudy]] = {}
    for p in paired:
        key = f"{p.standard.upper()} vs {p.pipelined.upper()} at P = {p.nprocs}"
        groups.setdefault(key, []).append(p)
    out = []
    for key, group in groups.items():
        told = [p.told()[0] for p in group]
        tally = sorted({v: told.count(v) for v in told}.items(), key=lambda kv: -kv[1])
        swept = curves(group)
        curve = swept[0] if len(swept) == 1 and len(swept[0]) == len(group) else None
        design = ("detour lengths" if curve else "design" if len(told) == 1 else "designs")

        def where(verdict: str, curve: list[PairedStudy] | None = curve) -> str:
            if curve is None:
                return ""
            at = [f"{significant(p.detour / p.iteration, 2)}×" for p in curve
                  if p.told()[0] == verdict]
            return f" (at {', '.join(at)} the iteration)"

        out.append(f"{key}: " + ", ".join(
            f"{v} in {c}" + (f" of {len(told)} {design}" if i == 0 else where(v))
            for i, (v, c) in enumerate(tally))
            + (" (on a loaded machine)" if any(p.loaded_blocks for p in group) else ""))
    return "; ".join(out)


def q2_sentences(paired: Sequence[PairedStudy]) -> tuple[str, ...]:
    """What the paired designs add to Q2: a sweep of detour lengths as one curve sentence, any
    other design by its verdict; one design alone also with its figures (issue 62: one answer
    per comparison, the figures in the noise study's findings)."""
    swept = curves(paired)
    inside = {id(s) for c in swept for s in c}
    said = [curve_sentence(c) for c in swept] + [p.short() for p in paired if id(p) not in inside]
    details = tuple(curve_figures(c) for c in swept)
    details += (paired[0].sentence(),) if len(paired) == 1 else ()
    return (f"{INJECTED} " + " ".join(said), *details)


def _span(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"


def noise_sentences(comparison: NoiseComparison) -> list[str]:
    """A few sentences per standard/pipelined method pair, over all its noises and P: who
    slowed down more, what each paid for the detours inside its runs, what Ê says of the gap;
    then where KS told ranks apart."""
    out = []
    groups: dict[tuple[str, str], list[NoisePair]] = {}
    for pair in comparison.pairs:
        groups.setdefault((pair.standard.ksp, pair.pipelined.ksp), []).append(pair)
    for (std, pip), pairs in groups.items():
        s_name, p_name = std.upper(), pip.upper()
        based = [p for p in pairs if p.measured_gap is not None
                 and p.standard.slowdown_pct is not None and p.pipelined.slowdown_pct is not None]
        parts = []
        if based:
            pct = sum(1 for p in based
                      if (p.standard.slowdown_pct or 0) > (p.pipelined.slowdown_pct or 0))
            sec = sum(1 for p in based if (p.measured_gap or 0) > 0)
            parts.append(f"{s_name} slowed down more than {p_name} in {pct} of {len(based)} "
                         f"noisy configurations in per cent of its noise-free time, and in {sec} "
                         "in seconds")
        costs = [(p.standard.detour_cost_ratio, p.pipelined.detour_cost_ratio,
                  p.pipelined.injected_rank_max / p.pipelined.injected_lockstep)
                 for p in pairs if p.standard.detour_cost_ratio is not None
                 and p.pipelined.detour_cost_ratio is not None and p.pipelined.injected_lockstep]
        if costs:
            parts.append(
                f"inside its runs, {s_name} paid {_span([c[0] for c in costs])} × Σₖ maxₚ D of "
                f"its detours and {p_name} {_span([c[1] for c in costs])} × (hiding them "
                f"completely would cost {_span([c[2] for c in costs])} ×)")
        errs = [p.nonstationary_gap_error_pct for p in based
                if p.nonstationary_gap_error_pct is not None]
        if errs:
            close = sum(1 for e in errs if abs(e) <= 25.0)
            parts.append(f"Ê puts the gap within 25 % of the measured one in {close} of "
                         f"{len(errs)}")
        if parts:
            out.append(f"{s_name} against {p_name}: " + "; ".join(parts) + ".")
    rows = [r for r in comparison.rows if r.ks_rejected_pct is not None]
    rejected = [r for r in rows if (r.ks_rejected_pct or 0) > 0]
    if rows:
        where = ", ".join(f"{r.ksp.upper()} P = {r.nprocs} {r.dist} ({r.ks_rejected_pct:.0f} %)"
                          for r in rejected)
        out.append(f"KS told ranks apart in {len(rejected)} of {len(rows)} noisy runs"
                   + (f": {where}." if rejected else "."))
    return out
