"""Q1's reason for the spread, first: per solver, how much of the iteration times' variance
follows from where an iteration sits (:mod:`.variance_split`) and how much is left for the
paper's distributions; and how the spread changes with P and n, per solver. Pure: the runs a
headline rests on and the clause naming them in, sentences out.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

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
           "rest, rank to rank and iteration to iteration at equal work, is what the paper's "
           "fitted distributions describe."]
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
        out.append(f"{k}{kind}: {cause}; the other {_pct(_share(v, lambda s: s.rest))} is "
                   "random.")
    return out


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
