"""The report's first screen: the study's questions, each answered in sentences with numbers.

Pure: analyses in, frozen dataclasses out. Every headline rests on the clean runs (no
``machine-loaded`` or ``log-on`` flag, not oversubscribed) when there are any, and says which
runs it rests on; when there are none, the sentence says so and names the caveat. Predictions
more than 50 % off are counted in the headline but shown under "Where the models fail".
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ksptrace.studies.result import Answer
from ksptrace.studies.variability.conclusions.fastest import entries, ranking_sentences, summary_of
from ksptrace.studies.variability.conclusions.findings import (
    FAR,
    attr,
    file_name,
    finding,
    fmt_n,
    headline,
    ks_sentence,
    n_of,
    problem_of,
)
from ksptrace.studies.variability.conclusions.heldout import (
    IN_SAMPLE,
    REPETITION,
    SAME_LOCAL_SIZE,
    held_out,
    other_size_pairs,
    p1_sources,
)
from ksptrace.studies.variability.conclusions.heldout_skill import (
    P1_NOTE,
    heldout_sentence,
    heldout_short,
)
from ksptrace.studies.variability.conclusions.larger_p import (
    LARGER_P,
    LargerP,
    larger_p_predictions,
    larger_p_sentence,
)
from ksptrace.studies.variability.conclusions.ranked import (
    RankedRun,
    caveat_names,
    ranking_of,
    selected,
)
from ksptrace.studies.variability.conclusions.ranking import Ranking
from ksptrace.studies.variability.conclusions.reasons import (
    held_out_tail_sentence,
    split_sentences,
    split_short,
    trend_sentences,
)
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.cycles import is_pipelined

STANDARD_OF = {"pgmres": "gmres", "pipefgmres": "fgmres", "pipebcgs": "bcgs", "pipecg": "cg",
               "pipecr": "cr", "pipelcg": "cg", "groppcg": "cg", "pipecgrr": "cg"}
"""The standard method each pipelined one reorganises (the pairs the paper compares)."""
MAX_PAIRS_SHOWN = 4
"""The largest-P pairs the answer spells out; the count covers all of them."""
MIN_PAIR_RANKS = 3
"""Below this P the wait for the slowest rank is the larger of one or two draws: too little
to tell how the methods compare at scale."""


def caveats(a: TraceAnalysis) -> tuple[str, ...]:
    """The conditions of ``a``'s run that a finding drawn from it must state."""
    return caveat_names((f.code for f in a.flags), dict(a.attrs), a.noisy)


@dataclass(frozen=True)
class Basis:
    """The runs a headline rests on, and the clause that says which they are."""

    runs: tuple[TraceAnalysis, ...]
    clause: str


def basis(analyses: Sequence[TraceAnalysis]) -> Basis:
    """The clean runs, or all runs with their caveats named when none is clean (the one
    selection, :func:`.ranked.selected`)."""
    return Basis(*selected(analyses, caveats))


def _spread(a: TraceAnalysis) -> float | None:
    return None if a.penalty is None else a.penalty.spread_pct


def _tail(a: TraceAnalysis) -> float | None:
    return None if a.penalty is None else a.penalty.tail_pct


def _median(values: Sequence[float | None]) -> float:
    return float(statistics.median([v for v in values if v is not None] or [0.0]))


def _wait_sentence(runs: Sequence[TraceAnalysis], clause: str) -> str | None:
    """Q1's split of the iteration times' variance into own work and waits in MPI reductions,
    over the runs whose traces hold wait times (issue 65)."""
    got = [a for a in runs if a.wait_split is not None and a.mpi_waits is not None]
    if not got:
        return None
    # one run's split, the run of median own-work share: three separate medians need not add
    # up to 100 % (the noise demo printed 100 %, 105 % and -98 %)
    middle = sorted(got, key=lambda a: a.wait_split.own if a.wait_split else 0.0)[
        (len(got) - 1) // 2].wait_split
    assert middle is not None
    own, wait, cov = middle.own, middle.wait, middle.covariance
    share = _median([a.mpi_waits.share for a in got if a.mpi_waits is not None])
    late = Counter(a.mpi_waits.least_waiting_rank for a in got if a.mpi_waits is not None)
    return (f"Measured inside MPI reductions (median over the {len(got)} with wait times of "
            f"{clause}): the ranks waited "
            f"{100 * share:.1f} % of their iteration time; of the variance of Tₚᵏ, in the run "
            f"of median own-work share, their own work makes {100 * own:.0f} %, their waits "
            f"{100 * wait:.0f} % and twice the covariance {100 * cov:+.0f} %. The rank that "
            f"waited least, and so was most often "
            f"the one the others waited for, was rank {late.most_common(1)[0][0]} in "
            f"{late.most_common(1)[0][1]} of them.")


def variability(analyses: Sequence[TraceAnalysis]) -> Answer:
    base = basis(analyses)
    by_solver: dict[str, list[TraceAnalysis]] = {}
    for a in base.runs:
        by_solver.setdefault(a.ksp.upper(), []).append(a)
    parts = ", ".join(f"{_median([_spread(a) for a in v]):.0f} % for {k}"
                      for k, v in sorted(by_solver.items()))
    tails = ", ".join(f"{_median([_tail(a) for a in v]):.0f} % for {k}"
                      for k, v in sorted(by_solver.items()))
    out = [*split_sentences(base.runs, base.clause),
           f"The middle half of an iteration's times spans {parts} of the median iteration "
           f"(interquartile range over median, median over {base.clause}); the 99th percentile "
           f"lies {tails} above the median.", *trend_sentences(base.runs)]
    waited = _wait_sentence(base.runs, base.clause)
    if waited:
        out.append(waited)
    tail = held_out_tail_sentence(base.runs, base.clause)
    if tail:
        out.append(tail)
    ks = ks_sentence([finding(a, "") for a in base.runs])
    if ks and len(base.runs) < len(analyses) and ks.startswith("Every run has P = 1"):
        # the left-out runs may have had P >= 2: say which runs this is about
        left = len(analyses) - len(base.runs)
        ks = ks.replace("Every run has P = 1", f"Every clean run has P = 1 ({left} flagged "
                        f"run{'s' if left != 1 else ''} left out)", 1)
    if ks:
        out.append(ks)
    return Answer("variability", "How variable are iteration times?", tuple(out),
                  short=split_short(base.runs, base.clause))


def _pairs(analyses: Sequence[TraceAnalysis]) -> list[tuple[TraceAnalysis, TraceAnalysis]]:
    """(standard, pipelined) runs of the same problem, n and P, in that order."""
    out = []
    for p in analyses:
        std = STANDARD_OF.get(p.ksp.lower())
        if not is_pipelined(p.ksp) or std is None:
            continue
        for s in analyses:
            if (s.ksp.lower() == std and (problem_of(s), n_of(s), s.nprocs)
                    == (problem_of(p), n_of(p), p.nprocs)):
                out.append((s, p))
                break
    return sorted(out, key=lambda sp: (problem_of(sp[0]), sp[0].nprocs, n_of(sp[0]) or 0))


def _pair_sentence(s: TraceAnalysis, p: TraceAnalysis, told: bool = True) -> str:
    """The pair's two waits with their intervals, and (``told``) which paid less: left out
    under an answer that cannot tell, which must not say "paid less" too (issue 62)."""
    assert s.penalty is not None
    assert p.penalty is not None
    std, pipe = s.penalty.lockstep, p.penalty.rank_sum
    if not told:
        verdict = "not a verdict (see above)"
    elif pipe.high < std.low:
        verdict = f"{p.ksp.upper()} paid less"
    elif std.high < pipe.low:
        verdict = f"{p.ksp.upper()} paid more"
    else:
        verdict = "the intervals overlap: no difference can be told"
    noted = sorted(set(caveats(s)) | set(caveats(p)))
    caveat = f" (runs {', '.join(noted)})" if noted else ""
    return (f"{problem_of(s)} n = {fmt_n(n_of(s))}, P = {s.nprocs}{caveat}: waiting for the "
            f"slowest rank cost {s.ksp.upper()} {std.text()} above its mean iterations, "
            f"{p.ksp.upper()} {pipe.text()}; {verdict}.{_measured_waits(s, p)}")


def _measured_waits(s: TraceAnalysis, p: TraceAnalysis) -> str:
    """The waits the two runs measured inside MPI reductions, when both traces hold them."""
    if s.mpi_waits is None or p.mpi_waits is None:
        return ""
    noise = dict(s.attrs).get("noise", "none"), dict(p.attrs).get("noise", "none")
    return (f" Measured inside MPI reductions, {s.ksp.upper()}'s ranks waited "
            f"{100 * s.mpi_waits.share:.1f} % of their iteration time, {p.ksp.upper()}'s "
            f"{100 * p.mpi_waits.share:.1f} %"
            + (f", under the same noise ({noise[0]})." if noise[0] == noise[1] else ".")
            + (" A pipelined method's delay may also reach its neighbours through the halo "
               "exchange, which is not counted." if p.mpi_waits.share < s.mpi_waits.share
               else ""))


def pipelined(analyses: Sequence[TraceAnalysis]) -> Answer:
    question = "Do the pipelined methods pay less for variability?"
    pairs = [(s, p) for s, p in _pairs(analyses) if s.penalty and p.penalty]
    lead = ("The paper's comparison: a standard method waits for the slowest rank at every "
            "iteration (Σₖ maxₚ Tₚᵏ), a pipelined one only at the end (maxₚ Σₖ Tₚᵏ); each is "
            "given above Σₖ meanₚ Tₚᵏ with a 95 % interval from resampling iterations.")
    if not pairs:
        return Answer("pipelined", question, (
            "Cannot tell on this data: no standard and pipelined pair (such as GMRES and "
            "PGMRES) ran at the same problem, n and P.",), basis="cannot tell")
    usable = [(s, p) for s, p in pairs
              if s.nprocs >= MIN_PAIR_RANKS and not caveats(s) and not caveats(p)]
    if usable:
        shown = usable[-MAX_PAIRS_SHOWN:]
        out = [lead, *(_pair_sentence(s, p) for s, p in shown)]
        less = sum(1 for s, p in usable
                   if p.penalty and s.penalty and p.penalty.rank_sum.high < s.penalty.lockstep.low)
        out.append(f"In {less} of {len(usable)} clean pair{'s' if len(usable) != 1 else ''} at "
                   f"P ≥ {MIN_PAIR_RANKS} the pipelined "
                   "method paid less, its interval wholly below the standard one's"
                   + (f" ({len(shown)} largest-P pairs above)." if len(usable) > len(shown)
                      else "."))
        return Answer("pipelined", question, tuple(out), short=out[-1].split(",")[0] + ".")
    why = []
    if all(s.nprocs < MIN_PAIR_RANKS for s, _ in pairs):
        why.append(f"every pair ran at P < {MIN_PAIR_RANKS}, where the slowest of one or two "
                   "ranks says little about the wait at scale")
    else:
        why.append(f"every pair at P ≥ {MIN_PAIR_RANKS} includes a run that was "
                   + " or ".join(sorted({c for s, p in pairs for c in caveats(s) + caveats(p)})))
    s, p = max(pairs, key=lambda sp: sp[0].nprocs)
    return Answer("pipelined", question, (
        f"Cannot tell on this data: {'; '.join(why)}.", lead,
        "For what it shows: " + _pair_sentence(s, p, told=False)), basis="cannot tell")


def _caveated(found: Sequence[LargerP], analyses: Sequence[TraceAnalysis]) -> str:
    """"2 of 4 targets oversubscribed, machine-loaded": the caveats of the predicted runs."""
    names = {file_name(a): caveats(a) for a in analyses}
    targets = {h.predicts for h in found}
    with_one = [t for t in targets if names.get(t)]
    named = ", ".join(sorted({c for t in with_one for c in names[t]}))
    named += " (loaded by construction)" if "oversubscribed" in named else ""
    return f"{len(with_one)} of {len(targets)} targets {named}" if with_one else ""


def models(analyses: Sequence[TraceAnalysis]) -> Answer:
    """Q3: out of sample first (held-out repetitions, the same n/P at another P); the fit of
    each run to itself after it, labelled as a fit (issue 52)."""
    question = "How well do the models predict KSPSolve?"
    base = basis(analyses)
    found = held_out(base.runs)
    reps = [h for h in found if h.basis == REPETITION]
    local = [h for h in found if h.basis == SAME_LOCAL_SIZE]
    out = []
    if reps:
        out.append(heldout_sentence(reps, "on another repetition of the same configuration",
                                     base.clause))
    if local:
        out.append(heldout_sentence(local, "at the same local size n/P on another P "
                                            "(through E[max of N])", base.clause))
    larger = larger_p_predictions(base.runs, [a for a in analyses if not a.noisy])
    if larger:
        out.append(larger_p_sentence(larger, base.clause, _caveated(larger, analyses)))
    if not found and not larger:
        out.append("Cannot tell how well the models predict: no run can be predicted out of "
                   f"sample here ({base.clause}; no configuration was repeated, and no two "
                   "configurations share n/P at different P); a campaign with repetitions = 2 "
                   "can tell.")
    if p1_sources(base.runs):
        out.append(P1_NOTE + ".")
    skipped = other_size_pairs(base.runs)
    if skipped:
        out.append(f"Another n/P is not predicted ({skipped} pairs of configurations): the "
                   "work of an iteration changes with the local size, and no per-iteration "
                   "work model is fitted.")
    scored = [(a, p) for a in base.runs if (p := headline(a)) is not None
              and p.error_pct is not None]
    if scored:
        errors = [abs(p.error_pct or 0.0) for _, p in scored]
        close = sum(1 for e in errors if e <= 10.0)
        far = sum(1 for e in errors if e > FAR)
        out.append(f"In sample (aₖ and sₖ fitted on the run it describes: a fit, not a "
                   f"prediction), the non-stationary model Σₖ E[max of N] of U(aₖ, aₖ + sₖ) "
                   f"(Σₖ μₖ for pipelined methods) is within 10 % of the measured time in "
                   f"{close} of {len(scored)} runs, median error {_median(errors):.1f} % "
                   f"({base.clause})"
                   + (f"; {far} more than {FAR:.0f} % off (“Where the models fail, and why”)"
                      if far else "") + ".")
    shares = [100.0 * a.setup / (a.measured + a.setup) for a in base.runs
              if a.setup is not None and a.measured + a.setup > 0]
    if shares:
        out.append(f"Measured times are the iterations': the set-up inside KSPSolve (KSPSetUp, "
                   f"PCSetUp, the initial residual), {min(shares):.1f}–{max(shares):.1f} % of "
                   f"it (median {_median(shares):.1f} %) in the {len(shares)} runs that "
                   "record it, is left out and stated on each run's page.")
    out.append("Table 1 gives every model and bound as such an in-sample fit; heldout.csv "
               "every out-of-sample prediction with its error beside the baselines' and the "
               "skill.")
    kind = REPETITION if reps else SAME_LOCAL_SIZE if local else IN_SAMPLE
    kind = kind if found or not larger else LARGER_P
    short = heldout_short((("a repetition", "the other repetition's time", reps),
                           ("the same n/P at another P", "the source P's time", local),
                           ("a larger P", "the smaller P's time", larger)))
    return Answer("models", question, tuple(out),
                  basis=kind if found or larger or scored else "none", short=short)


STACK_ATTRS = ("petsc_version", "petsc_arch", "petsc_int_bytes", "petsc_debugging", "mpi_library")
"""What names a software stack in a trace (a trace written before these has fewer)."""


def stacks(analyses: Sequence[TraceAnalysis]) -> str | None:
    """A sentence naming the software stacks when the runs come from more than one."""
    found: dict[tuple[str, ...], int] = {}
    for a in analyses:
        key = tuple(str(attr(a, name) or "") for name in STACK_ATTRS)
        found[key] = found.get(key, 0) + 1
    if len(found) < 2:
        return None
    named = "; ".join(
        f"{count} with PETSc {v or '?'}{f' ({arch})' if arch else ''}"
        f"{f', {ints}-byte indices' if ints else ''}"
        f"{', a debugging build' if debug == 'yes' else ''}, {mpi or 'an unnamed MPI'}"
        for (v, arch, ints, debug, mpi), count in sorted(found.items(), key=lambda kv: -kv[1]))
    return (f"These runs come from {len(found)} software stacks ({named}): compare times "
            "within one stack.")


def fastest(analyses: Sequence[TraceAnalysis]) -> Answer:
    question = "Which solver is fastest where?"
    mixed = stacks(analyses)
    answer = _fastest(analyses, question)
    if mixed is None:
        return answer
    return Answer(answer.key, answer.question, (*answer.sentences, mixed),
                  short=answer.short)


def fastest_ranking(analyses: Sequence[TraceAnalysis], every: bool = False) -> Ranking:
    """The one answer to "which solver is fastest where" (Q4, the terminal table's marks, the
    decision page and summary.json all use it): the clean runs, or all runs with their caveat
    named, ranked by :mod:`.ranking`'s rule (``every``: all runs, for a decision map the clean
    ones alone cannot make)."""
    return ranking_of([RankedRun(e, caveats(a)) for e, a in zip(entries(analyses), analyses,
                                                                strict=True)], every)


def fastest_summary(analyses: Sequence[TraceAnalysis]) -> dict[str, Any]:
    """summary.json's ``fastest``: the ranking's basis, rule and verdicts, and the P-scaling
    anomalies of every run (what the terminal table marks)."""
    return summary_of(fastest_ranking(analyses), analyses)


def _fastest(analyses: Sequence[TraceAnalysis], question: str) -> Answer:
    ranking = fastest_ranking(analyses)
    return Answer("fastest", question, tuple(ranking_sentences(ranking, analyses)),
                  short=ranking.short())


def answer_all(analyses: Sequence[TraceAnalysis]) -> tuple[Answer, ...]:
    """The variability study's answers, in the report's order."""
    return (variability(analyses), pipelined(analyses), models(analyses), fastest(analyses))
