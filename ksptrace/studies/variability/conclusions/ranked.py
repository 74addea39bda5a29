"""The runs the fastest-solver answer rests on, and its one ranking: from analysed runs (the
report) or from traces read without an analysis (``ksptrace decide``), by the same selection
and the same rule (issue 52: one answer per question).

Selection: the clean runs (no run condition that makes a timing unrepresentative) when there
are any; otherwise all runs with their caveats named, runs with injected noise left out. The
rule: :func:`ksptrace.studies.variability.conclusions.ranking.rank`. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ksptrace.errors import KsptraceError
from ksptrace.noise.spec import parse
from ksptrace.studies.variability.conclusions.ranking import Entry, Ranking, rank, with_condition
from ksptrace.studies.variability.run.flags import condition_flags
from ksptrace.studies.variability.stats.setup_time import recorded_setup
from ksptrace.trace.model import CONFIG_DEFAULTS, Trace

CAVEATS = {"machine-loaded": "machine-loaded", "log-on": "PETSc's event log on",
           "oversubscribed": "oversubscribed", "noise": "with injected noise"}
"""Run conditions that make a timing unrepresentative, and how a sentence names them."""
GROUP_KEYS = ("pc", "iterations", "noise", "problem_config", "solve")
"""Run settings besides the problem, n and P that make a configuration (the solver excluded;
the restart length goes with the GMRES family, as in the decision maps)."""

T = TypeVar("T")


def caveat_names(flag_codes: Iterable[str], attrs: Mapping[str, Any],
                 noisy: bool) -> tuple[str, ...]:
    """The caveats of a run from its flags' codes, its attributes and its injected noise."""
    found = [CAVEATS[c] for c in flag_codes if c in CAVEATS]
    if str(attrs.get("oversubscribed")).lower() in ("true", "1", "yes"):
        found.append(CAVEATS["oversubscribed"])
    if noisy:  # the noise study's runs: not the solver on this machine (issue 52)
        found.append(CAVEATS["noise"])
    return tuple(dict.fromkeys(found))


def trace_noisy(trace: Trace) -> bool:
    """Whether the trace ran with injected noise the analysis would count (an unreadable
    spec, one no run injects, one that reaches no rank or no recorded detours count as none,
    as there)."""
    try:
        spec = parse(str(trace.attr("noise", "none") or "none"))
    except KsptraceError:
        return False
    return (spec.active and spec.run_problem() is None
            and spec.reach_problem(trace.nprocs, trace.n_nodes, idle=True) is None
            and trace.injected_seconds is not None)


def group_of(attrs: Mapping[str, Any], nprocs: int) -> tuple[tuple[str, str], ...]:
    """The configuration of a run with its solver left out (the ranking's group)."""
    n = attrs.get("n")
    n_text = str(int(n)) if isinstance(n, int | float) else ""
    return (("problem", str(attrs.get("problem") or "?")), ("n", n_text), ("P", str(nprocs)),
            *((k, str(attrs.get(k, CONFIG_DEFAULTS.get(k)))) for k in GROUP_KEYS))


@dataclass(frozen=True)
class RankedRun:
    """What the ranking reads of one run: its entry (configuration, solver, the iterations'
    KSPSolve of the slowest rank, label) and its caveats."""

    entry: Entry
    caveats: tuple[str, ...]


def of_trace(trace: Trace) -> RankedRun:
    """A trace as the report's analysis would rank it (set-up left out, as in ``measured``)."""
    setup = recorded_setup(trace)
    seconds = trace.solve_max if setup is None else trace.solve_max - setup
    attrs = dict(trace.attrs)
    entry = Entry(group_of(attrs, trace.nprocs), str(trace.attr("ksp", "") or "").upper(),
                  float(seconds), trace.path or trace.label)
    return RankedRun(entry, caveat_names((f.code for f in condition_flags(trace)), attrs,
                                         trace_noisy(trace)))


def selected(runs: Sequence[T], caveats_of: Callable[[T], tuple[str, ...]],
             every: bool = False) -> tuple[tuple[T, ...], str]:
    """The clean runs, or all runs with their caveats named when none is clean (or when
    ``every``: the clean ones alone cannot answer, e.g. they cover no decision map); and the
    clause that says which."""
    clean = tuple(r for r in runs if not caveats_of(r))
    if clean and not every:
        left = len(runs) - len(clean)
        return clean, (f"{len(clean)} clean run{'s' if len(clean) != 1 else ''}"
                       + (f"; {left} flagged run{'s' if left != 1 else ''} left out" if left
                          else ""))
    natural = tuple(r for r in runs if CAVEATS["noise"] not in caveats_of(r)) or tuple(runs)
    counts: dict[str, int] = {}
    for r in natural:
        for c in caveats_of(r):
            counts[c] = counts.get(c, 0) + 1
    named = ", ".join(f"{v} {k}" for k, v in counts.items())
    noisy = len(runs) - len(natural)  # detours the harness added never stand for a solver
    if clean:
        return natural, (f"all {len(natural)} runs, {len(clean)} of them clean ({named}; the "
                         "clean runs alone cover no map"
                         + (f"; {noisy} with injected noise left out" if noisy else "")
                         + "): treat these numbers as partly the loaded machine's")
    return natural, (f"all {len(natural)} runs, none clean ({named}"
                     + (f"; {noisy} with injected noise left out" if noisy else "")
                     + "): treat these numbers as the loaded machine's, not the solver's")


def ranking_of(runs: Sequence[RankedRun], every: bool = False) -> Ranking:
    """The one fastest-solver ranking of ``runs``: the selected runs by the module's rule
    (``every``: all of them with their caveats, for a map the clean runs alone cannot make)."""
    chosen, clause = selected(runs, lambda r: r.caveats, every)
    return rank([with_condition(r.entry, r.caveats) for r in chosen], clause)
