"""Q2 as a curve: the paired verdict at each detour length of one design (issue 62).

A paired campaign that sweeps the detour's length at one detour rate (``examples/
demo_paired.toml``: 0.25 to 4 times the iteration) gives one :class:`PairedStudy` per length.
The paper's claim has a condition the curve shows: a pipelined method overlaps one reduction
with one iteration's local work, so it can hide another rank's detour only while the detour
fits in that work. The sentence states each length's difference with its interval and
verdict, then where the pipelined method paid less and where it could not be told. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from ksptrace.studies.noise.blocks import PairedStudy
from ksptrace.studies.noise.paired import CANNOT_TELL, PIPELINED_PAYS_LESS
from ksptrace.studies.numbers import significant
from ksptrace.studies.variability.conclusions.findings import fmt_time

MIN_POINTS = 2
"""A design with fewer detour lengths than this is no curve: its verdict is said alone."""


def curves(studies: Sequence[PairedStudy]) -> list[list[PairedStudy]]:
    """The studies that form a curve: same methods, P and detour rate, each with its own
    detour length (sorted by it); at least MIN_POINTS of them."""
    groups: dict[tuple[str, str, int, float], list[PairedStudy]] = {}
    for s in studies:
        if s.detour > 0 and s.iteration > 0:
            groups.setdefault((s.standard, s.pipelined, s.nprocs, s.detour_p), []).append(s)
    return [sorted(g, key=lambda s: s.detour) for g in groups.values()
            if len({s.detour for s in g}) >= MIN_POINTS]


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
    told = [s.told()[0] for s in points]
    less = [f"{significant(s.detour / s.iteration, 2)}×"
            for s, v in zip(points, told, strict=True)
            if v == PIPELINED_PAYS_LESS]
    text = ("Standard minus pipelined noise cost per iteration (noisy minus noise-free KSPSolve "
            "in the same block), by detour length: " + "; ".join(_point(s) for s in points)
            + ". ")
    if less:
        rest = len(points) - len(less)
        text += f"Pipelined pays less at {', '.join(less)}"
        text += (f"; at the other {rest} length{'s' if rest != 1 else ''} "
                 f"{'it' if rest == 1 else 'they'} cannot be told apart" if rest else "") + "."
    else:
        text += (f"At no length could a difference be told ({CANNOT_TELL}): the paper's claim "
                 "is not shown on this machine.")
    return text + (" In the discrete-event model a pipeline of depth one hides another rank's "
                   "detour only while it fits in one iteration's local work (docs/noise.md).")
