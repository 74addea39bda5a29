"""Q1's reason for the spread, first: per solver, how much of the iteration times' variance
follows from where an iteration sits (:mod:`.variance_split`) and how much is left for the
paper's distributions; and how the spread changes with P and n, per solver. Pure: the runs a
headline rests on and the clause naming them in, sentences out.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from ksptrace.studies.numbers import seconds_text
from ksptrace.studies.variability.conclusions.findings import fmt_n, n_of, problem_of
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.variance_split import VarianceSplit


def _median(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return float(statistics.median(found)) if found else None


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _by_solver(runs: Sequence[TraceAnalysis]) -> dict[str, list[TraceAnalysis]]:
    out: dict[str, list[TraceAnalysis]] = {}
    for a in runs:
        out.setdefault(a.ksp.upper(), []).append(a)
    return dict(sorted(out.items()))


def _share(splits: Sequence[VarianceSplit], part: Callable[[VarianceSplit], float]) -> float:
    return _median([part(s) for s in splits]) or 0.0


def split_sentences(runs: Sequence[TraceAnalysis], clause: str) -> list[str]:
    """The overview sentence, then one per solver: each deterministic cause's share of the
    iteration-time variance (median over the solver's runs) and the rest."""
    solvers = {k: [a.variance for a in v if a.variance is not None]
               for k, v in _by_solver(runs).items()}
    solvers = {k: v for k, v in solvers.items() if v}
    if not solvers:
        return []
    over = ", ".join(f"{_pct(_share(v, lambda s: s.deterministic))} for {k}"
                     for k, v in solvers.items())
    out = [f"Where an iteration sits (restart-cycle position, pipeline fill, first iteration) "
           f"explains {over} of the iteration times' variance (median over {clause}); the "
           "rest is level shifts or drift, if any, and the randomness (rank to rank, iteration "
           "to iteration) that the paper's fitted distributions describe."]
    for k, v in solvers.items():
        length = max(s.cycle_length for s in v)
        parts = []
        if length > 1:
            parts.append(f"the position in its {length}-iteration restart cycle "
                         f"{_pct(_share(v, lambda s: s.cycle))}")
        if any(s.has_fill for s in v):
            parts.append(f"pipeline fill {_pct(_share(v, lambda s: s.fill))}")
        parts.append(f"the first iteration {_pct(_share(v, lambda s: s.first))}")
        cause = "explained by " + ", by ".join(parts)
        kind = "" if length > 1 else (" (no restart cycle; its fixed number of reductions per "
                                      "iteration sets the level, not the spread)")
        slow = _share(v, lambda s: s.slow.share if s.slow is not None else 0.0)
        rest = (f"the other {_pct(_share(v, lambda s: s.rest))} is random" if slow <= 0 else
                f"of the other {_pct(_share(v, lambda s: s.rest))}, level shifts and drift "
                f"take {_pct(slow)} and {_pct(_share(v, lambda s: s.random))} is random (rank "
                "to rank, iteration to iteration)")
        out.append(f"{k}{kind}: {cause}; {rest}.")
    slow_text = not_random(runs)
    return [*out, slow_text] if slow_text else out


MAX_NAMED = 3
"""Runs a "not random" sentence names; the counts cover all."""


def _where(a: TraceAnalysis) -> str:
    n = n_of(a)
    return f"{a.ksp.upper()} {problem_of(a)}{f' n = {fmt_n(n)}' if n else ''}, P = {a.nprocs}"


def _ms(seconds: float) -> str:
    return seconds_text(seconds, 3) or f"{seconds * 1e9:.0f} ns"


def _named(items: list[str]) -> str:
    more = len(items) - MAX_NAMED
    return "; ".join(items[:MAX_NAMED]) + (f"; and {more} more" if more > 0 else "")


def not_random(runs: Sequence[TraceAnalysis]) -> str | None:
    """The runs whose rest is not random: level shifts, drift, two modes (issue 63)."""
    shifted, drifting, bimodal = [], [], []
    for a in runs:
        v = a.variance
        if v is None:
            continue
        if v.slow is not None and v.slow.kind == "level shift" and v.slow.share > 0:
            first = 100 * v.slow.shifts[0] / max(a.iterations, 1)
            shifted.append(f"{_where(a)}: {_ms(v.slow.levels[0])} per iteration for its first "
                           f"{first:.0f} %, then " + ", then ".join(_ms(x) for x in
                                                                   v.slow.levels[1:])
                           + f" ({_pct(v.slow.share)} of its variance)")
        elif v.slow is not None and v.slow.kind == "drift" and v.slow.share > 0:
            lag = f", lag-1 autocorrelation {v.slow.lag1:.2f}" if v.slow.lag1 is not None else ""
            drifting.append(f"{_where(a)} ({_pct(v.slow.share)} of its variance{lag})")
        if v.modes is not None and v.modes.bimodal:
            lo, hi = v.modes.means
            bimodal.append(f"{_where(a)}: modes {_ms(lo)} and {_ms(hi)} "
                           f"({100 * v.modes.weights[0]:.0f} / {100 * v.modes.weights[1]:.0f} %)")
    parts = []
    if shifted:
        parts.append(f"{len(shifted)} run{'s shift' if len(shifted) != 1 else ' shifts'} level "
                     f"({_named(shifted)})")
    if drifting:
        parts.append(f"{len(drifting)} run{'s drift' if len(drifting) != 1 else ' drifts'} "
                     f"({_named(drifting)})")
    if bimodal:
        parts.append(f"{len(bimodal)} run{'s are' if len(bimodal) != 1 else ' is'} bimodal "
                     f"({_named(bimodal)}), which no single fitted family describes")
    if not parts:
        return None
    return "Not random: " + "; ".join(parts) + "."


def _spread(a: TraceAnalysis) -> float | None:
    return None if a.penalty is None else a.penalty.spread_pct


def _change(pairs: Sequence[tuple[str, list[TraceAnalysis], list[TraceAnalysis]]]) -> str:
    shown = []
    for k, lo, hi in pairs:
        before, after = _median([_spread(a) for a in lo]), _median([_spread(a) for a in hi])
        if before is not None and after is not None:
            shown.append(f"{before:.0f} % to {after:.0f} % for {k}")
    return ", ".join(shown)


def trend_sentences(runs: Sequence[TraceAnalysis]) -> list[str]:
    """How the interquartile spread changes from the smallest to the largest P (and n, per
    problem), for each solver that ran at both ends."""
    out = []
    solvers = _by_solver(runs)
    ps = sorted({a.nprocs for a in runs})
    if len(ps) > 1:
        lo, hi = ps[0], ps[-1]
        text = _change([(k, [a for a in v if a.nprocs == lo], [a for a in v if a.nprocs == hi])
                        for k, v in solvers.items()])
        if text:
            out.append(f"From P = {lo} to P = {hi} that spread goes from {text}.")
    for problem in sorted({problem_of(a) for a in runs}):
        sizes = sorted({n for a in runs if problem_of(a) == problem and (n := n_of(a))})
        if len(sizes) < 2:
            continue
        lo_n, hi_n = sizes[0], sizes[-1]
        text = _change([(k, [a for a in v if problem_of(a) == problem and n_of(a) == lo_n],
                         [a for a in v if problem_of(a) == problem and n_of(a) == hi_n])
                        for k, v in solvers.items()])
        if text:
            out.append(f"On {problem}, from n = {fmt_n(lo_n)} to n = {fmt_n(hi_n)} it goes from "
                       f"{text}.")
    return out


def held_out_tail_sentence(runs: Sequence[TraceAnalysis], clause: str) -> str | None:
    """Whether the fitted distributions describe data they were not fitted on: each run's best
    family, and its bulk-plus-detours model, refitted on a random half of its iterations and
    their 99th percentile set against the other half's (:mod:`..stats.halves`)."""
    fits = [a.tails.best_fit for a in runs if a.tails is not None and a.tails.best_fit]
    models = [a.tails.detour_check for a in runs if a.tails is not None
              and a.tails.detour_check is not None]
    if not fits and not models:
        return None
    parts = []
    for name, checks in (("the best fitted family", fits),
                         ("the bulk-plus-detours model", models)):
        if checks:
            missed = sum(1 for c in checks if c is not None and c.flagged)
            miss = _median([abs(c.miss) for c in checks if c is not None]) or 0.0
            median = f"{100 * miss:.1f} %" if miss <= 10.0 else "more than 1000 %"
            parts.append(f"{name} misses it by more than 25 % and beyond its sampling error in "
                         f"{missed} of {len(checks)} (median miss {median})")
    return ("Held out (each run's model refitted on a random half of its iterations, its 99th "
            f"percentile against the other half's; {clause}): " + "; ".join(parts)
            + "; such a fit is a maximum of the likelihood that does not describe the tail "
            "E[max of N] depends on (flagged tail-miss on the run's page).")


def split_short(runs: Sequence[TraceAnalysis], clause: str) -> str:
    """Q1 for the first screen: the deterministic share's range over the solvers, and what the
    rest is ("" without a variance split)."""
    shares = [_share(v, lambda s: s.deterministic) for v in
              ([a.variance for a in w if a.variance is not None]
               for w in _by_solver(runs).values()) if v]
    if not shares:
        return ""
    lo, hi = _pct(min(shares)), _pct(max(shares))
    span = lo if lo == hi else f"{lo.removesuffix(' %')}–{hi}"
    by = " by solver" if len(shares) > 1 else ""
    return (f"Where an iteration sits explains {span} of the iteration times' variance{by}; "
            f"the rest is drift, level shifts and randomness ({clause}).")
