"""Q2 as a curve: the paired verdict at each detour length of one design (issue 62).

A paired campaign that sweeps the detour's length at one detour rate (``examples/
demo_paired.toml``: 0.25 to 4 times the iteration) gives one :class:`PairedStudy` per length.
The paper's claim has a condition the curve shows: a pipelined method overlaps one reduction
with one iteration's local work, so it can hide another rank's detour only while the detour
fits in that work. The sentence states each length's difference with its interval and
verdict, then where the pipelined method paid less and where it could not be told. Pure.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ksptrace.studies.noise.blocks import PairedStudy
from ksptrace.studies.noise.paired import CANNOT_TELL, PIPELINED_PAYS_LESS, STANDARD_PAYS_LESS
from ksptrace.studies.numbers import significant
from ksptrace.studies.variability.conclusions.findings import fmt_time

MIN_POINTS = 2
"""A design with fewer detour lengths than this is no curve: its verdict is said alone."""


def curves(studies: Sequence[PairedStudy]) -> list[list[PairedStudy]]:
    """The studies that form a curve: same methods, P, detour distribution family and rate,
    each with its own detour length (sorted by it), at least MIN_POINTS lengths apart by 10 %
    or more; a group that is no curve (the noise demo's exponential, lognormal and Pareto
    detours of one mean read "2.5×, 2.5×, 2.5×") is said design by design."""
    groups: dict[tuple[str, str, int, str, float], list[PairedStudy]] = {}
    for s in studies:
        if s.detour > 0 and s.iteration > 0:
            family = s.noise.partition(":")[0]
            groups.setdefault((s.standard, s.pipelined, s.nprocs, family, s.detour_p),
                              []).append(s)
    found = []
    for g in groups.values():
        lengths = sorted(s.detour for s in g)
        apart = all(b >= 1.1 * a for a, b in itertools.pairwise(lengths))
        if len(lengths) >= MIN_POINTS and apart:
            found.append(sorted(g, key=lambda s: s.detour))
    return found


def _point(s: PairedStudy) -> str:
    e = s.estimate
    ratio = s.detour / s.iteration
    head = f"{significant(ratio, 2)}× ({fmt_time(s.detour)})"
    verdict, _ = s.told()
    if e.failed:
        return f"{head}: {verdict} (a noise cost came out below zero: the estimate failed)"
    if e.blocks < 3:
        return f"{head}: {verdict} ({e.why})"
    d = e.difference
    return (f"{head}: {fmt_time(d.estimate)} [95 % {fmt_time(d.low)}, {fmt_time(d.high)}], "
            f"{verdict}")


def _lengths(points: Sequence[PairedStudy]) -> str:
    return ", ".join(f"{significant(s.detour / s.iteration, 2)}×" for s in points)


def curve_sentence(points: Sequence[PairedStudy]) -> str:
    """The curve's answer in one short sentence: at which detour lengths (over the noise-free
    iteration) the pipelined method paid less, and at which it could not be told (one verdict
    per length)."""
    first = points[0]
    std, pip = first.standard.upper(), first.pipelined.upper()
    by: dict[str, list[PairedStudy]] = {}
    for s in points:
        by.setdefault(s.told()[0], []).append(s)
    said = [f"{verdict} at {_lengths(group)}" for verdict, group in by.items()]
    text = (f"{std} vs {pip} at P = {first.nprocs}, detours of {_lengths(points)} the "
            f"{fmt_time(first.iteration)} noise-free iteration in "
            f"{significant(first.detour_p * 100, 3)} % "
            f"of iterations ({first.estimate.blocks} paired blocks each): " + "; ".join(said))
    loaded = sum(s.loaded_blocks for s in points)
    if loaded:
        total = sum(s.estimate.blocks for s in points)
        text += f", on a loaded machine ({loaded} of {total} blocks had foreign CPU load)"
    return text + "."


def curve_figures(points: Sequence[PairedStudy]) -> str:
    """The curve's figures: per detour length the standard minus the pipelined cost per
    iteration with its interval and verdict; then where the pipelined method paid less, and
    the claim's condition in the model."""
    by: dict[str, list[str]] = {}
    for s in points:
        by.setdefault(s.told()[0], []).append(f"{significant(s.detour / s.iteration, 2)}×")
    text = ("Standard minus pipelined noise cost per iteration (noisy minus noise-free KSPSolve "
            "in the same block), by detour length: " + "; ".join(_point(s) for s in points)
            + ". ")
    less, more = by.get(PIPELINED_PAYS_LESS, []), by.get(STANDARD_PAYS_LESS, [])
    unknown = by.get(CANNOT_TELL, [])
    if less:
        text += f"Pipelined pays less at {', '.join(less)}"
        if more:
            text += f"; standard pays less at {', '.join(more)}"
        if unknown:
            rest = len(unknown)
            text += (f"; at the other {rest} length{'s' if rest != 1 else ''} "
                     f"{'it' if rest == 1 else 'they'} cannot be told apart")
        text += "."
    elif more:
        text += (f"Standard pays less at {', '.join(more)}"
                 + (f"; {CANNOT_TELL} at {', '.join(unknown)}" if unknown else "")
                 + ": at no length did the pipelined method pay less, so the paper's claim is "
                 "not shown on this machine.")
    else:
        text += (f"At no length could a difference be told ({CANNOT_TELL}): the paper's claim "
                 "is not shown on this machine.")
    waited = [s for s in points if s.noisy_waits is not None]
    if waited:
        std, pip = points[0].standard.upper(), points[0].pipelined.upper()
        text += (" Measured inside MPI reductions, the share of their iteration time the ranks "
                 "waited in the noisy runs (median over blocks): " + "; ".join(
                     f"{significant(s.detour / s.iteration, 2)}× {std} "
                     f"{100 * s.noisy_waits[0]:.1f} %, {pip} {100 * s.noisy_waits[1]:.1f} %"
                     for s in waited if s.noisy_waits is not None)
                 + " (a pipelined method's delay that reaches a neighbour through the halo "
                   "exchange is not counted).")
    told = len(less) + len(more)
    if told and len(points) > 1:
        chance = 1 - 0.95 ** len(points)
        text += (f" Each length's interval is at 95 % on its own: where no length differs, one "
                 f"or more of {len(points)} is told apart by chance in {100 * chance:.0f} % of "
                 f"such curves, so {told} told of {len(points)} is "
                 + ("weak evidence." if told == 1 else "stronger evidence than any one alone."))
    return text + (" In the discrete-event model a pipeline of depth one hides another rank's "
                   "detour only while it fits in one iteration's local work (docs/noise.md).")


def curve_costs(points: Sequence[PairedStudy]) -> str:
    """What the injected noise cost each method per iteration at each detour length of a curve
    (noisy minus noise-free KSPSolve in the same block, the mean over the blocks), and the
    verdict per length: the noise study's first finding when its design is a sweep."""
    first = points[0]
    std, pip = first.standard.upper(), first.pipelined.upper()

    def cost(s: PairedStudy) -> str:
        e = s.estimate
        head = f"{significant(s.detour / s.iteration, 2)}×"
        if e.failed or e.blocks < 3:
            return f"{head} {s.told()[0]}"
        return (f"{head} {std} {fmt_time(e.standard_cost.estimate)}, "
                f"{pip} {fmt_time(e.pipelined_cost.estimate)}")

    return (f"What the injected detours cost per iteration ({std} and {pip} at P = "
            f"{first.nprocs}, noisy minus noise-free KSPSolve in the same block, the mean over "
            f"{first.estimate.blocks} paired blocks), by detour length over the "
            f"{fmt_time(first.iteration)} noise-free iteration: "
            + "; ".join(cost(s) for s in points) + f". {curve_sentence(points)}")
