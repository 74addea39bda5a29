"""How loaded the machine was during a sweep over P, and how far its repetitions agree.

The segmentation report reduces the repetitions at each P to their minimum: interference from
other processes (another job, a test suite on the same cores) only ever adds time, so the
fastest repetition is the one closest to the undisturbed cost, and it stays there as long as
one repetition per P ran undisturbed. A median needs a majority of undisturbed repetitions;
with three per P, two disturbed runs move it, and under a busy background process that
happens at several P of an oversubscribed sweep.

This module reads what the harness records in each trace (``loadavg_before``, the 1-minute
load average when the run started; ``foreign_cpu_share``, the share of the node's CPU
capacity other processes used during the solve; ``cpu_count``) and says, in words, how
loaded the campaign was and where more repetitions would firm up the minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.trace.model import FOREIGN_LOAD_LIMIT, Trace

UNDISTURBED_QUANTILE = 0.05
"""The quantile over iterations that :func:`undisturbed_time` takes (see there)."""

SPREAD_LIMIT = 0.05
"""Two fastest repetitions further apart than this (relative) call for more repetitions."""


def _num(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def undisturbed_time(times: np.ndarray, q: float = UNDISTURBED_QUANTILE) -> float:
    """K times the ``q`` quantile over iterations of the slowest rank's iteration time.

    ``times`` is [P, K] (T_p^k). An iteration lasts as long as its slowest rank, b_k =
    max_p T_p^k. A process outside the job takes a core in time slices of milliseconds, longer
    than an iteration of these solves, so it disturbs some iterations and leaves the others
    alone: a low quantile of b_k is the cost of an undisturbed iteration. Oversubscription is
    different: with more ranks than cores there is never a moment when all ranks run, so
    every iteration pays for it and the low quantile rises with it. Measured on this machine
    (docs/segmentation.md): beside one busy process pinned to a core, the KSPSolve time jumps
    between p = 1 and 2, this value stays flat to p = 2 and jumps between 2 and 3, where the
    ranks outnumber the cores. The 5 % quantile rather than the minimum, so that one
    iteration's lucky timer reading does not set it.
    """
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 2 or t.size == 0:
        raise AnalysisError(f"iteration times must be a non-empty [P, K] matrix, got {t.shape}")
    if not 0.0 <= q <= 1.0:
        raise AnalysisError(f"the quantile must be in [0, 1], got {q}")
    slowest = t.max(axis=0)
    return float(slowest.size * np.quantile(slowest, q))


@dataclass(frozen=True)
class SweepLoad:
    """The load during one series' runs, and its repetitions' spread from below."""

    cores: int | None
    """Cores the runs had (the smallest node's CPU count times the node count)."""
    loadavg_max: float | None
    foreign_share_max: float | None
    loaded_p: tuple[float, ...]
    """P with at least one run during which others used more than FOREIGN_LOAD_LIMIT."""
    spread: dict[float, float]
    """Per repeated P, the gap between the two fastest repetitions relative to the fastest."""

    def notes(self) -> tuple[str, ...]:
        out = []
        if self.loadavg_max is not None or self.foreign_share_max is not None:
            parts = []
            if self.loadavg_max is not None:
                cores = f" on {self.cores} cores" if self.cores else ""
                parts.append(f"load average up to {self.loadavg_max:.2f}{cores} at run start")
            if self.foreign_share_max is not None:
                parts.append(f"other processes used up to {self.foreign_share_max:.0%} of the "
                             "CPU capacity during a solve")
            out.append("machine load during the sweep: " + "; ".join(parts))
        if self.loaded_p:
            out.append(
                f"runs at P = {_fmt(self.loaded_p)} were disturbed (others used more than "
                f"{FOREIGN_LOAD_LIMIT:.0%} of the CPU); the minimum over repetitions is used"
            )
        wide = sorted(p for p, gap in self.spread.items() if gap > SPREAD_LIMIT)
        if wide:
            out.append(
                f"the two fastest repetitions differ by more than {SPREAD_LIMIT:.0%} at "
                f"P = {_fmt(wide)}: repeat those runs for a firmer minimum"
            )
        return tuple(out)

    def as_dict(self) -> dict[str, object]:
        spread = {f"{p:g}": round(g, 4) for p, g in self.spread.items()}
        return {"cores": self.cores, "loadavg_max": self.loadavg_max,
                "foreign_cpu_share_max": self.foreign_share_max,
                "loaded_p": list(self.loaded_p), "spread_two_fastest": spread}  # fmt: skip


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def sweep_load(traces: Sequence[Trace], p: np.ndarray, y: np.ndarray) -> SweepLoad:
    """The load of ``traces`` and the spread of the values ``y`` measured at ``p``."""
    cores = [
        int(c) * max(int(_num(t.attr("n_nodes", 1)) or 1), 1)
        for t in traces
        if (c := _num(t.attr("cpu_count"))) is not None and c > 0
    ]
    loads = [v for t in traces if (v := _num(t.attr("loadavg_before"))) is not None]
    shares = [(float(t.nprocs), v) for t in traces
              if (v := _num(t.attr("foreign_cpu_share"))) is not None]  # fmt: skip
    spread = {}
    for v in np.unique(p):
        reps = np.sort(y[p == v])
        if reps.size >= 2 and reps[0] > 0:
            spread[float(v)] = float((reps[1] - reps[0]) / reps[0])
    return SweepLoad(
        cores=min(cores) if cores else None,
        loadavg_max=max(loads) if loads else None,
        foreign_share_max=max(s for _, s in shares) if shares else None,
        loaded_p=tuple(sorted({q for q, s in shares if s > FOREIGN_LOAD_LIMIT})),
        spread=spread,
    )
