"""Why iteration times spread: the share of their variance that follows from where each
iteration sits, and the rest.

Some of the spread of the Tₚᵏ is deterministic, known before any run:

* **the first iteration** carries one-off work (the initial residual, first touches of memory);
* **pipeline fill**: pipelined GMRES spends two cheap iterations filling its pipeline at the
  start of every restart cycle;
* **the position in the restart cycle**: a GMRES iteration orthogonalises against every basis
  vector so far, so its work (and the length of its one reduction) grows through each cycle of
  ``restart`` iterations.

The reductions per iteration are fixed for each method (PETSc's count, ``ksptrace
reductions``): they set the level of a method's iterations, not their spread, except through the
growing GMRES reduction, which the cycle position already holds.

The split is an analysis of variance over groups of iterations of equal expected work: the first
iteration, and every cycle position (each pipeline-fill position a group of its own). A factor's
share is the sum over its groups of nₘ (meanₘ − mean)² over the total sum of squares, less what
noise alone would give each group (one within-group mean square per group; a share is never
below 0). The rest, rank to rank and iteration to iteration at equal work, is what the paper's
fitted distributions describe. Pure: an array and a cycle layout in, a frozen dataclass out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ksptrace.studies.variability.stats.cycles import CycleLayout
from ksptrace.studies.variability.stats.drift import (
    SAMPLE,
    Modality,
    SlowPart,
    modality,
    slow_part,
)

BLOCK = 1 << 22
"""Values per block of the total sum of squares."""


@dataclass(frozen=True)
class VarianceSplit:
    """Shares (0..1) of the variance of all Tₚᵏ of one run, by cause; they add up to 1."""

    variance: float
    """The variance of every recorded Tₚᵏ, in s²."""
    first: float
    """Explained by the first iteration."""
    fill: float
    """Explained by the pipeline-fill iterations."""
    cycle: float
    """Explained by the position in the restart cycle (the other iterations)."""
    cycle_length: int
    has_fill: bool = False
    """Whether the run had pipeline-fill iterations at all."""
    slow: SlowPart | None = None
    """Of the rest: level shifts or drift over the run (:mod:`.drift`); None when too short."""
    modes: Modality | None = None
    """Whether the position-adjusted times are bimodal (:mod:`.drift`)."""

    @property
    def deterministic(self) -> float:
        return self.first + self.fill + self.cycle

    @property
    def rest(self) -> float:
        return max(0.0, 1.0 - self.deterministic)

    @property
    def random(self) -> float:
        """The rest less the slow part: rank to rank and iteration to iteration."""
        return max(0.0, self.rest - (self.slow.share if self.slow is not None else 0.0))


def _between(counts: np.ndarray, sums: np.ndarray, members: np.ndarray) -> tuple[float, int]:
    """Sum of squares of the ``members`` groups' means about their pooled mean, and its
    degrees of freedom (groups - 1)."""
    n, total = counts[members], sums[members]
    used = n > 0
    if used.sum() < 2:
        return 0.0, 0
    mean = total[used].sum() / n[used].sum()
    return float((n[used] * (total[used] / n[used] - mean) ** 2).sum()), int(used.sum()) - 1


def variance_split(times: np.ndarray, layout: CycleLayout) -> VarianceSplit | None:
    """The split of ``times`` (P ranks x K iterations, seconds) by ``layout``'s positions; None
    with fewer than two iterations or no variance.

    The groups nest: the first iteration against the rest; within the rest, the fill
    iterations against the others; within each of those, one group per cycle position. Each
    level's sum of squares goes to its cause (first, fill, fill and cycle), less its degrees of
    freedom times the within-group mean square (what noise alone gives)."""
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 2 or t.shape[1] < 2 or t.shape[1] != layout.iterations:
        return None
    p, k = t.shape
    mean = float(t.sum() / t.size)
    step = max(1, BLOCK // k)  # row blocks: no temporary as large as a paper-scale trace
    total = 0.0
    for s in range(0, p, step):
        d = t[s:s + step] - mean
        total += float(np.einsum("ij,ij->", d, d))
    if total <= 0.0 or not np.isfinite(total):
        return None
    length = layout.cycle_length
    # groups: 0 the first iteration, 1 + q the later iterations at cycle position q
    group = np.where(np.arange(k) == 0, 0, layout.position + 1)
    counts = np.bincount(group, minlength=length + 1).astype(np.float64) * p
    sums = np.bincount(group, weights=t.sum(axis=0), minlength=length + 1)
    is_fill = np.zeros(length + 1, dtype=bool)
    is_fill[1 + layout.position[layout.fill]] = True
    later = np.arange(length + 1) > 0
    # level 1: the first iteration against the rest; level 2: fill against work iterations
    pooled_c = np.array([counts[0], counts[later].sum()])
    pooled_s = np.array([sums[0], sums[later].sum()])
    ss_first, df_first = _between(pooled_c, pooled_s, np.ones(2, dtype=bool))
    kinds_c = np.array([counts[later & is_fill].sum(), counts[later & ~is_fill].sum()])
    kinds_s = np.array([sums[later & is_fill].sum(), sums[later & ~is_fill].sum()])
    ss_fill, df_fill = _between(kinds_c, kinds_s, np.ones(2, dtype=bool))
    ss_fillpos, df_fillpos = _between(counts, sums, later & is_fill)
    ss_cycle, df_cycle = _between(counts, sums, later & ~is_fill)
    explained = ss_first + ss_fill + ss_fillpos + ss_cycle
    groups = int((counts > 0).sum())
    dof = t.size - groups
    noise = max(total - explained, 0.0) / dof if dof > 0 else 0.0

    def share(ss: float, df: int) -> float:
        return max(ss - df * noise, 0.0) / total

    first = share(ss_first, df_first)
    fill = share(ss_fill + ss_fillpos, df_fill + df_fillpos)
    cycle = share(ss_cycle, df_cycle)
    scale = max(1.0, first + fill + cycle)  # rounding must not push the rest below 0
    # what the positions leave: each iteration's offset from its position's mean
    position = (sums / np.maximum(counts, 1.0))[group]
    slow, fit = slow_part(t.mean(axis=0)[1:] - position[1:], p, total, noise, mean)
    if slow is not None:  # shifts counted from the run's first iteration
        slow = replace(slow, shifts=tuple(s + 1 for s in slow.shifts))
    # bimodality of the times with the positions and the slow part taken out (a level shift
    # alone would look bimodal)
    pick = np.random.default_rng(0).integers(0, t.size, min(t.size, SAMPLE))
    at = pick % k
    modes = modality(t.ravel()[pick] - position[at] + mean - np.r_[0.0, fit][at])
    return VarianceSplit(total / t.size, first / scale, fill / scale, cycle / scale,
                         length, bool(layout.fill.any()), slow, modes)
