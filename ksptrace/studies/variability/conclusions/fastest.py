"""The fastest-solver answer in words and in summary.json: analysed runs as the ranking's
entries (:mod:`.ranking`), and its verdicts and P-scaling anomalies as sentences and records.

Which runs are ranked (the clean ones, or all with their caveat) is decided once, by
``answers.fastest_ranking``; everything here only renders that one ranking. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksptrace.studies.variability.conclusions import ranked
from ksptrace.studies.variability.conclusions.findings import fmt_n
from ksptrace.studies.variability.conclusions.ranking import (
    SINGLE_MARGIN,
    SLOWDOWN,
    Anomaly,
    Entry,
    Ranking,
    anomalies,
)
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.spread import PooledSpread, Z

MAX_CONFIGS_SHOWN = 4
"""Configurations a "cannot tell" or an anomaly sentence names; the count covers all."""
RULE = (f"median KSPSolve; fastest only when separated from every other solver beyond the "
        f"run-to-run spread: repetitions' ranges apart; single runs beyond {Z:g}× the spread "
        f"pooled over repeated comparable runs (its 95 % upper bound), or, for clean runs with "
        f"no repetition anywhere, more than {100 * SINGLE_MARGIN:.0f} % apart (a stated margin); "
        f"runs with a caveat (loaded, oversubscribed, log on) only beyond their own pooled "
        f"spread, else \"cannot tell (loaded)\"")


def group_of(a: TraceAnalysis) -> tuple[tuple[str, str], ...]:
    """The configuration of a run with its solver left out (the ranking's group)."""
    return ranked.group_of(dict(a.attrs), a.nprocs)


def group_text(group: tuple[tuple[str, str], ...]) -> str:
    """"laplace1d n = 10⁴, P = 2" (and the noise, when some was injected)."""
    g = dict(group)
    n = f" n = {fmt_n(int(g['n']))}," if g.get("n") else ""
    noise = f", noise {g['noise']}" if g.get("noise") not in (None, "none") else ""
    return f"{g['problem']}{n} P = {g['P']}{noise}"


def entries(analyses: Sequence[TraceAnalysis]) -> list[Entry]:
    """Each run as the ranking sees it: configuration, solver, KSPSolve of the slowest rank."""
    return [Entry(group_of(a), a.ksp.upper(), float(a.measured), a.path or a.label)
            for a in analyses]


def scaling_anomalies(analyses: Sequence[TraceAnalysis]) -> tuple[Anomaly, ...]:
    """Every run's P-scaling anomalies (flagged runs included: the table marks those too)."""
    return anomalies(entries(analyses))


def _listed(items: Sequence[str]) -> str:
    more = len(items) - MAX_CONFIGS_SHOWN
    return "; ".join(items[:MAX_CONFIGS_SHOWN]) + (f" and {more} more" if more > 0 else "")


def ranking_sentences(ranking: Ranking, analyses: Sequence[TraceAnalysis]) -> list[str]:
    """Q4: the ranking's sentence, where it cannot tell, and the P-scaling anomalies."""
    out = [ranking.sentence()]
    open_ = [v for v in ranking.compared() if v.winner is None]
    if open_:
        out.append(f"Cannot tell where the times lie within the run-to-run spread "
                   f"({spread_clause(ranking)}): "
                   + _listed([f"{group_text(v.group)} ({', '.join(v.tied)}"
                              + (f"; {v.condition}" if v.condition else "") + ")"
                              for v in open_])
                   + ".")
    slow = scaling_anomalies(analyses)
    if slow:
        out.append(f"With more ranks, {len(slow)} solver{'s' if len(slow) != 1 else ''} got at "
                   f"least {SLOWDOWN:g}× slower (every run, flagged ones included): "
                   + _listed([f"{a.solver} on {group_text(a.group)}: {a.ratio:.1f}× its time "
                              f"at P = {a.smaller}" for a in slow]) + ".")
    return out


def spread_clause(ranking: Ranking) -> str:
    """What the run-to-run spread was: measured (pooled, with its interval) or stated."""
    parts = ["repetitions' ranges overlap"]
    if ranking.spread is not None:
        parts.append(f"single runs within {Z:g}× the spread between repetitions of clean runs, "
                     f"{ranking.spread.text()}")
    else:
        parts.append(f"single clean runs within {100 * SINGLE_MARGIN:.0f} %, a stated margin: "
                     "no clean configuration was repeated to measure the spread")
    if ranking.loaded_spread is not None:
        parts.append(f"runs with a caveat within {Z:g}× their own spread, "
                     f"{ranking.loaded_spread.text()}")
    elif any(t.condition for v in ranking.verdicts for t in v.timings):
        parts.append("runs with a caveat never told apart: none was repeated to measure "
                     "their spread")
    return "; ".join(parts)


def _spread_record(s: PooledSpread | None) -> dict[str, Any] | None:
    return None if s is None else {"sigma_log": s.sigma, "low": s.low, "high": s.high,
                                   "dof": s.dof, "configurations": s.groups}


def _where(group: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    g = dict(group)
    return {"problem": g["problem"], "n": int(g["n"]) if g["n"] else None,
            "nprocs": int(g["P"]), "noise": g["noise"]}


def summary_of(ranking: Ranking, analyses: Sequence[TraceAnalysis]) -> dict[str, Any]:
    """summary.json's ``fastest``: the basis, the rule, every verdict, the anomalies."""
    return {
        "basis": ranking.clause,
        "rule": RULE,
        "spread": _spread_record(ranking.spread),
        "loaded_spread": _spread_record(ranking.loaded_spread),
        "configurations": [
            {**_where(v.group), "verdict": v.kind, "fastest": v.winner,
             "condition": v.condition or None,
             "cannot_tell": list(v.tied),
             "median_seconds": {t.solver: t.median for t in v.timings},
             "repetitions": {t.solver: t.repetitions for t in v.timings}}
            for v in ranking.verdicts],
        "slowdown": SLOWDOWN,
        "scaling_anomalies": [
            {**_where(a.group), "ksp": a.solver, "from_nprocs": a.smaller, "ratio": a.ratio}
            for a in scaling_anomalies(analyses)],
    }
