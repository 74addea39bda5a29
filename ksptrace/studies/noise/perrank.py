"""Runs whose noise differs from rank to rank (specs joined by ``;``): where KS tells ranks
apart, method by method. The known truth of docs/noise.md: one rank made slow by a fixed cost,
another given random detours shorter than that cost. A method that ends every iteration in a
blocking reduction hides the fast rank's detours inside its wait for the slow one (every rank's
iteration times the same: KS must not reject); a pipelined method waits one iteration later,
so the fast rank's own detours show in its own times (KS must reject). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace.studies.noise.blocks import LOADED
from ksptrace.studies.variability.run.pipeline import TraceAnalysis


@dataclass(frozen=True)
class PerRankKS:
    """KS over the runs of one method under one per-rank noise at one P."""

    ksp: str
    nprocs: int
    noise: str
    """The noise without its seeds."""
    runs: int
    rejected: int
    """Runs in which KS rejected at least one rank pair."""
    loaded: int
    """Runs flagged machine-loaded."""
    oversubscribed: int
    """Runs with more ranks than cores."""


def _unseeded(text: str) -> str:
    return "; ".join(",".join(p for p in part.split(",") if not p.startswith("seed="))
                     for part in text.split("; "))


def per_rank_ks(analyses: Sequence[TraceAnalysis]) -> tuple[PerRankKS, ...]:
    """One entry per (method, P, noise) among runs with a mix of specs and a KS test."""
    groups: dict[tuple[str, int, str], list[TraceAnalysis]] = {}
    for a in analyses:
        if a.injection is None or not a.injection.spec.also or a.ks_all is None:
            continue
        key = (a.ksp.lower(), a.nprocs, _unseeded(a.injection.spec.text()))
        groups.setdefault(key, []).append(a)
    return tuple(
        PerRankKS(ksp=ksp, nprocs=p, noise=noise, runs=len(runs),
                  rejected=sum(1 for a in runs if a.ks_all and a.ks_all.fraction_rejected > 0),
                  loaded=sum(1 for a in runs if any(f.code == LOADED for f in a.flags)),
                  oversubscribed=sum(1 for a in runs if dict(a.attrs).get("oversubscribed")))
        for (ksp, p, noise), runs in sorted(groups.items()))


def per_rank_sentences(entries: Sequence[PerRankKS]) -> list[str]:
    """One sentence per per-rank noise: in how many runs KS told ranks apart, per method."""
    by_noise: dict[str, list[PerRankKS]] = {}
    for e in entries:
        by_noise.setdefault(e.noise, []).append(e)
    out = []
    for noise, group in by_noise.items():
        counts = ", ".join(
            f"{e.ksp.upper()} (P = {e.nprocs}{', oversubscribed' if e.oversubscribed else ''}) "
            f"in {e.rejected} of {e.runs}" for e in group)
        loaded = sum(e.loaded for e in group)
        tail = (f"; {loaded} of {sum(e.runs for e in group)} runs were flagged machine-loaded"
                if loaded else "")
        out.append(f"A different noise per rank ({noise}): KS told ranks apart in {counts} "
                   f"runs{tail}.")
    return out
