"""Which solver is fastest in each configuration, by one rule, for every place that says so.

The rule: in each configuration (every run setting but the solver), the solvers are ordered by
their median KSPSolve over repetitions. The leader is *the fastest* only when it is separated
from every other solver by more than the run-to-run spread:

* both solvers repeated: the leader's slowest repetition is faster than the other's fastest
  (their ranges do not overlap);
* a single run of either: the medians' log-ratio exceeds the margin of the run-to-run spread
  pooled over the repetitions of comparable runs (:mod:`..stats.spread`: clean runs with clean
  runs, runs with a caveat with such runs); when no comparable run was repeated, the other
  must be more than ``SINGLE_MARGIN`` slower (a stated rule, not a measured spread, for clean
  runs only);
* runs with a caveat (loaded, oversubscribed, PETSc's event log on) are told apart only beyond
  their own pooled spread, whether repeated or not, and never without one: otherwise the
  answer is "cannot tell (loaded)".

Otherwise the answer is "cannot tell between" the leader and every solver it is not separated
from. Which runs enter (clean ones, or all with their caveat) is decided by the caller once, and
its clause travels with the ranking. Pure: entries in, frozen dataclasses out.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ksptrace.studies.variability.stats.spread import PooledSpread, pooled_spread

SINGLE_MARGIN = 0.05
"""Without repetitions, a solver within this share of the leader's time is not told apart."""
SLOWDOWN = 2.0
"""A configuration at least this many times slower than at the next smaller P (the same
problem, n and solver) is a P-scaling anomaly: strong scaling should make it faster."""


@dataclass(frozen=True)
class Entry:
    """One run: its configuration (ordered (key, value) pairs, solver excluded), its solver and
    its KSPSolve in seconds."""

    group: tuple[tuple[str, str], ...]
    solver: str
    seconds: float
    label: str = ""
    condition: str = ""
    """"" for a clean run, else what makes its timing unrepresentative ("loaded", ...)."""


@dataclass(frozen=True)
class Timing:
    """One solver's KSPSolve in one configuration, over its repetitions."""

    solver: str
    median: float
    low: float
    high: float
    repetitions: int
    condition: str = ""
    """"" when every run of it is clean, else the condition of its runs ("loaded", ...)."""


@dataclass(frozen=True)
class Verdict:
    """The answer for one configuration."""

    group: tuple[tuple[str, str], ...]
    timings: tuple[Timing, ...]
    """Fastest median first."""
    winner: str | None
    """The fastest solver, or None when it cannot be told (or only one solver ran)."""
    tied: tuple[str, ...]
    """With no winner: the leader and the solvers it is not separated from."""
    condition: str = ""
    """The condition of its runs ("loaded", ...) when any of them has one."""

    def value(self, key: str) -> str | None:
        return dict(self.group).get(key)

    @property
    def kind(self) -> str:
        if len(self.timings) < 2:
            return "one solver"
        return "fastest" if self.winner is not None else "cannot tell"

    def text(self) -> str:
        if self.winner is not None:
            return f"{self.winner} is fastest"
        if len(self.timings) < 2:
            return f"only {self.timings[0].solver} ran"
        why = f" ({self.condition})" if self.condition else ""
        return f"cannot tell{why} between " + " and ".join(self.tied)


@dataclass(frozen=True)
class Ranking:
    """Every configuration's verdict, and the clause naming the runs it rests on."""

    verdicts: tuple[Verdict, ...]
    clause: str
    labels: tuple[str, ...] = ()
    """The runs the ranking rests on."""
    spread: PooledSpread | None = None
    """The run-to-run spread pooled over the repetitions of the clean runs."""
    loaded_spread: PooledSpread | None = None
    """The same over the runs with a caveat (loaded, oversubscribed, log on)."""

    def compared(self, where: Callable[[Verdict], bool] | None = None) -> list[Verdict]:
        return [v for v in self.verdicts if len(v.timings) > 1 and (where is None or where(v))]

    def short(self) -> str:
        """The first screen's sentence: the winners counted, the basis named only when no run
        is clean (a loaded campaign must say so even there)."""
        shown = self.compared()
        loaded = f" ({self.clause})" if self.clause.startswith("all ") else ""
        if not shown:
            return f"No configuration ran two solvers{loaded}."
        wins: dict[str, int] = {}
        for v in shown:
            if v.winner is not None:
                wins[v.winner] = wins.get(v.winner, 0) + 1
        told = ", ".join(f"{k} in {c}" for k, c in sorted(wins.items(), key=lambda kv: -kv[1]))
        unit = "configuration" if len(shown) == 1 else "configurations"
        if not told:
            return (f"Cannot tell in any of the {len(shown)} {unit} with two or more "
                    f"solvers{loaded}: no time beyond the run-to-run spread.")
        open_ = len(shown) - sum(wins.values())
        return (f"Fastest beyond the run-to-run spread{loaded}: {told} of {len(shown)} {unit}"
                + (f"; cannot tell in {open_}." if open_ else "."))

    def sentence(self, where: Callable[[Verdict], bool] | None = None,
                 unit: str = "configurations") -> str:
        """The one sentence every output uses (``where`` picks the configurations)."""
        shown = self.compared(where)
        if not shown:
            return f"No configuration ran two solvers ({self.clause}), so none can be ranked."
        wins: dict[str, int] = {}
        for v in shown:
            if v.winner is not None:
                wins[v.winner] = wins.get(v.winner, 0) + 1
        told = ", ".join(f"{k} in {c}" for k, c in sorted(wins.items(), key=lambda kv: -kv[1]))
        open_ = len(shown) - sum(wins.values())
        head = (f"the fastest solver (median KSPSolve, separated beyond the run-to-run spread) "
                f"is {told}" if told else "no solver is fastest beyond the run-to-run spread in "
                "any")
        tail = f"; it cannot tell in {open_}" if told and open_ else ""
        if len(shown) == 1:
            unit = unit.removesuffix("s")
        return (f"Of the {len(shown)} {unit} that ran two or more solvers ({self.clause}), "
                f"{head}{' of them' if not told else ''}{tail}.")


def _timing(solver: str, runs: Sequence[Entry]) -> Timing:
    seconds = [e.seconds for e in runs]
    condition = next((e.condition for e in runs if e.condition), "")
    return Timing(solver, float(statistics.median(seconds)), float(min(seconds)),
                  float(max(seconds)), len(seconds), condition)


def separated(lead: Timing, other: Timing, spread: PooledSpread | None = None,
              loaded_spread: PooledSpread | None = None) -> bool:
    """Whether ``lead`` is faster than ``other`` beyond the run-to-run spread (module rule;
    ``spread`` pooled over clean repetitions, ``loaded_spread`` over those with a caveat)."""
    loaded = bool(lead.condition or other.condition)
    pooled = loaded_spread if loaded else spread
    beyond = (pooled is not None and other.median > 0 < lead.median
              and np.log(other.median / lead.median)
              > pooled.margin(lead.repetitions, other.repetitions))
    if lead.repetitions > 1 and other.repetitions > 1:
        return lead.high < other.low and (beyond or not loaded)
    if pooled is None:
        return not loaded and other.median > lead.median * (1.0 + SINGLE_MARGIN)
    return beyond


def verdict(group: tuple[tuple[str, str], ...], by_solver: dict[str, list[Entry]],
            spread: PooledSpread | None = None,
            loaded_spread: PooledSpread | None = None) -> Verdict:
    timings = sorted((_timing(s, t) for s, t in by_solver.items()),
                     key=lambda t: (t.median, t.solver))
    lead = timings[0]
    close = [t for t in timings[1:] if not separated(lead, t, spread, loaded_spread)]
    condition = next((t.condition for t in (lead, *close) if t.condition), "")
    if len(timings) > 1 and not close:
        return Verdict(group, tuple(timings), lead.solver, ())
    return Verdict(group, tuple(timings), None,
                   (lead.solver, *(t.solver for t in close)) if close else (),
                   condition if close else "")


def rank(entries: Sequence[Entry], clause: str) -> Ranking:
    """The verdict of every configuration of ``entries``, in the configurations' order."""
    groups: dict[tuple[tuple[str, str], ...], dict[str, list[Entry]]] = {}
    for e in entries:
        groups.setdefault(e.group, {}).setdefault(e.solver, []).append(e)
    spreads = tuple(pooled_spread([np.array([e.seconds for e in runs if bool(e.condition) == c])
                                   for by_solver in groups.values()
                                   for runs in by_solver.values()]) for c in (False, True))
    return Ranking(tuple(verdict(g, groups[g], *spreads) for g in sorted(groups, key=_order)),
                   clause, tuple(e.label for e in entries), *spreads)


def with_condition(entry: Entry, caveats: Sequence[str]) -> Entry:
    """``entry`` marked with its run's condition: "loaded" when loaded or oversubscribed,
    else its first caveat ("" for a clean run)."""
    if not caveats:
        return entry
    load = any(c in ("machine-loaded", "oversubscribed") for c in caveats)
    return replace(entry, condition="loaded" if load else caveats[0])


def _order(group: tuple[tuple[str, str], ...]) -> tuple[tuple[str, float, str], ...]:
    """Numeric values sort as numbers (n = 30 000 before 100 000)."""
    out = []
    for key, value in group:
        try:
            out.append((key, float(value), ""))
        except ValueError:
            out.append((key, float("inf"), value))
    return tuple(out)


@dataclass(frozen=True)
class Anomaly:
    """A solver that got much slower from one P to the next larger one."""

    group: tuple[tuple[str, str], ...]
    """The configuration at the larger P."""
    solver: str
    smaller: int
    larger: int
    ratio: float


def anomalies(entries: Sequence[Entry], key: str = "P") -> tuple[Anomaly, ...]:
    """Every (configuration but ``key``, solver) whose median KSPSolve at a P is at least
    ``SLOWDOWN`` times its median at the next smaller P present."""
    series: dict[tuple[tuple[tuple[str, str], ...], str], dict[int, list[float]]] = {}
    template: dict[tuple[tuple[tuple[str, str], ...], str], tuple[tuple[str, str], ...]] = {}
    for e in entries:
        rest = tuple((k, v) for k, v in e.group if k != key)
        template.setdefault((rest, e.solver), e.group)
        series.setdefault((rest, e.solver), {}).setdefault(int(dict(e.group)[key]),
                                                           []).append(e.seconds)
    out = []
    for name in sorted(series, key=lambda s: (_order(s[0]), s[1])):
        by_p = series[name]
        ps = sorted(by_p)
        for small, large in itertools.pairwise(ps):
            before, after = statistics.median(by_p[small]), statistics.median(by_p[large])
            if before > 0 and after >= SLOWDOWN * before:
                group = tuple((k, str(large) if k == key else v) for k, v in template[name])
                out.append(Anomaly(group, name[1], small, large, float(after / before)))
    return tuple(out)
