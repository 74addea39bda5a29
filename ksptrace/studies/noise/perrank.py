"""Runs whose noise differs from rank to rank (specs joined by ``;``): where KS tells ranks
apart, method by method. The known truth of docs/noise.md: one rank made slow by a fixed cost,
another given random detours shorter than that cost. A method that ends every iteration in a
blocking reduction hides the fast rank's detours inside its wait for the slow one (every rank's
iteration times the same: KS must not reject); a pipelined method waits one iteration later,
so the fast rank's own detours show in its own times (KS must reject).

The asymmetry is stated with intervals (issue 62): each method's share of runs in which KS
rejected, with its Wilson score 95 % interval, and the pipelined minus the standard share with
Newcombe's hybrid score interval (built from the two Wilson intervals); it "shows" when that
interval lies above 0 and is "cannot tell" otherwise. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ksptrace.studies.noise.blocks import LOADED
from ksptrace.studies.noise.compare import PIPELINED_VARIANT
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


Z95 = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score 95 % interval of a share k / n (n >= 1)."""
    p, z2 = k / n, Z95**2
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """k1/n1 - k2/n2 with Newcombe's hybrid score 95 % interval (his method 10)."""
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson(k1, n1), wilson(k2, n2)
    d = p1 - p2
    return (d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def _share(e: PerRankKS) -> str:
    low, high = wilson(e.rejected, e.runs)
    return f"{e.rejected} of {e.runs} [95 % {100 * low:.0f}–{100 * high:.0f} %]"


def asymmetry(group: Sequence[PerRankKS]) -> list[str]:
    """For each standard method and its pipelined variant at one P in ``group``: the
    pipelined share of rejecting runs minus the standard one, with its interval, and whether
    the asymmetry shows."""
    out = []
    for std in group:
        pip = next((e for e in group if e.nprocs == std.nprocs
                    and e.ksp == PIPELINED_VARIANT.get(std.ksp)), None)
        if pip is None:
            continue
        d, low, high = newcombe(pip.rejected, pip.runs, std.rejected, std.runs)
        told = ("shows" if low > 0 else "the other way" if high < 0 else
                "cannot tell on this data (the interval contains 0)")
        out.append(f"{pip.ksp.upper()} minus {std.ksp.upper()} at P = {std.nprocs}: "
                   f"{100 * d:+.0f} points [95 % {100 * low:+.0f}, {100 * high:+.0f}], {told}")
    return out


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
            f"in {_share(e)}" for e in group)
        loaded = sum(e.loaded for e in group)
        tail = (f"; {loaded} of {sum(e.runs for e in group)} runs were flagged machine-loaded"
                if loaded else "")
        pairs = asymmetry(group)
        tail += ("; the asymmetry in the share of runs, " + "; ".join(pairs)) if pairs else ""
        out.append(f"A different noise per rank ({noise}): KS told ranks apart in {counts} "
                   f"runs{tail}.")
    return out
