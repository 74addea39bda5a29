"""How long a collectives run will take, and how far it is: rank 0's lines on stderr.

**The estimate.** PLogP measures in rounds, each over every message size in an order shuffled
per round, and both ranks measuring in turn: every round does the same work, so the first
round's time times the number of rounds (warm-up rounds included) is a fair estimate of the
whole run, printed as soon as that first round ends. The collectives measure one size after
another (each size's warm-up calls, then its repetitions), so no first part stands for the
whole: before any size is measured, a probe runs two repetitions of every size (its buffers
prepared and checked as in the run) and the estimate is, per size, the preparation, the first
repetition (cold: it touches fresh buffers, as the run's first warm-up call does) and
(warm-up + repetitions - 1) times the second. Counting every repetition as the first put a
64 MiB allreduce run at 44 s where it took 13 s (P = 2, load 7.8).

**Progress.** Between rounds (PLogP) or sizes (the collectives), at most every
:data:`EVERY` seconds, a line with the elapsed time and the time left: the estimate of the
units left, scaled by how the units done compared with their estimate. Nothing here runs
inside a timed region; the caller prints between rounds or sizes, on rank 0 only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

PREFIX = "collectives: "
"""Every line starts so (the launching process relays these lines as they come)."""
EVERY = 10.0
"""Seconds at least between two progress lines."""


def duration(seconds: float) -> str:
    """``0.37 s``, ``5.6 s``, ``42 s``, ``2 min 10 s``, ``1 h 5 min``."""
    if seconds < 0.005:
        return "under 0.01 s"
    if seconds < 0.995:
        return f"{seconds:.2f} s"
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def clock(seconds: float) -> str:
    """``H:MM:SS``, as the campaign and analysis progress lines print it."""
    hours, rest = divmod(round(max(seconds, 0.0)), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


@dataclass(frozen=True)
class Plan:
    """The estimated seconds of each unit of a run (a round or a size), in the order run."""

    unit: str
    costs: tuple[float, ...]

    @property
    def total(self) -> float:
        return float(sum(self.costs))

    def left(self, done: int, elapsed: float) -> float:
        """Seconds left after ``done`` units took ``elapsed``: the estimate of the rest, scaled
        by the ratio of the time taken to the estimate of the units done."""
        planned = sum(self.costs[:done])
        rest = float(sum(self.costs[done:]))
        return rest * elapsed / planned if planned > 0 else rest


def rounds_plan(first_round: float, rounds: int) -> Plan:
    """PLogP: every round costs what the first did."""
    return Plan("round", (first_round,) * rounds)


def sizes_plan(prepare: Sequence[float], cold: Sequence[float], warm: Sequence[float],
               per_size: int) -> Plan:
    """The collectives: per size, its preparation, one cold repetition (the first, which
    touches the fresh buffers) and ``per_size - 1`` warm ones (``per_size``: warm-up +
    repetitions), each as the probe timed them."""
    return Plan("size", tuple(p + c + (per_size - 1) * w
                              for p, c, w in zip(prepare, cold, warm, strict=True)))


def rounds_line(plan: Plan, sizes: int, load: float) -> str:
    return (f"{PREFIX}estimated {duration(plan.total)} for {len(plan.costs)} rounds over "
            f"{sizes} sizes (the first round took {duration(plan.costs[0])}; load {load:.1f})")


def sizes_line(plan: Plan, per_size: int, probe: float, load: float) -> str:
    return (f"{PREFIX}estimated {duration(plan.total)} for {len(plan.costs)} sizes x "
            f"{per_size} repetitions (a probe of two repetitions at every size took "
            f"{duration(probe)}; load {load:.1f})")


def progress_line(plan: Plan, done: int, elapsed: float) -> str:
    return (f"{PREFIX}{plan.unit} {done} of {len(plan.costs)} (elapsed {clock(elapsed)}, "
            f"ETA {clock(plan.left(done, elapsed))})")


class Reporter:
    """Rank 0's lines: the estimate once, then progress at most every ``every`` seconds (never
    after the last unit). ``now`` is the clock (monotonic)."""

    def __init__(self, stream: TextIO, load: float, every: float = EVERY,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.load, self.every, self.now = stream, load, every, now
        self.started = self.last = now()
        self.plan: Plan | None = None

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
        self.last = self.now()

    def start(self) -> None:
        """The measurement starts now (after a probe): elapsed times count from here."""
        self.started = self.last = self.now()

    def planned(self, plan: Plan, line: str) -> None:
        self.plan = plan
        self._say(line)

    def before_rounds(self, rounds: int, sizes: int) -> None:
        """PLogP: what the first round is for (at 256 MiB-1 GiB it alone can take minutes)."""
        self._say(f"{PREFIX}timing the first of {rounds} rounds over {sizes} sizes for an "
                  "estimate of the run's length")
        self.start()

    def after_round(self, done: int, rounds: int, sizes: int) -> None:
        """PLogP, between rounds: the estimate after the first, then progress."""
        if done == 1 and self.plan is None:
            first = self.now() - self.started
            plan = rounds_plan(first, rounds)
            self.planned(plan, rounds_line(plan, sizes, self.load))
            return
        self.progress(done)

    def progress(self, done: int) -> None:
        if self.plan is None or done >= len(self.plan.costs):
            return
        now = self.now()
        if now - self.last >= self.every:
            self._say(progress_line(self.plan, done, now - self.started))
