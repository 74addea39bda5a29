"""Iteration bookkeeping: where each iteration sits in its restart cycle.

Restarted GMRES repeats a cycle of ``restart`` iterations whose work grows with the basis size, so
only iterations at the same cycle position do equal work. Pipelined GMRES adds two
pipeline-fill iterations to each cycle (cycle length ``restart + 2``); they are cheap and are
usually dropped before fitting distributions. Methods without restarts have cycle length 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError

RESTARTED_METHODS: frozenset[str] = frozenset({"gmres", "fgmres", "lgmres", "dgmres"})
"""KSP types whose work follows a restart cycle of ``restart`` iterations."""
PIPELINED_RESTARTED: frozenset[str] = frozenset({"pgmres", "pipefgmres"})
"""Pipelined restarted KSP types: cycle of ``restart + 2``, the first two fill the pipeline."""
PIPELINED_METHODS: frozenset[str] = frozenset(
    {"pgmres", "pipefgmres", "pipebcgs", "pipecg", "pipecr", "pipelcg", "groppcg", "pipecgrr"}
)
"""KSP types that overlap their reductions with work (modelled by T' = max_p sum_k)."""
FILL_ITERATIONS = 2
"""Pipeline-fill iterations per cycle of pipelined GMRES."""
DEFAULT_RESTART = 30
"""PETSc's default GMRES restart length."""


def is_pipelined(ksp: str) -> bool:
    """True for KSP types modelled as pipelined (no global synchronisation per iteration)."""
    return ksp.lower() in PIPELINED_METHODS


@dataclass(frozen=True)
class CycleLayout:
    """Cycle position of each of K iterations."""

    position: np.ndarray
    """int64 [K]: 0-based position of iteration k in its cycle."""
    cycle_length: int
    """Iterations per cycle (1 for methods without restarts)."""
    fill: np.ndarray
    """bool [K]: True for pipeline-fill iterations."""

    @property
    def iterations(self) -> int:
        return int(self.position.size)

    def keep(self, drop_fill: bool = True) -> np.ndarray:
        """Indices of the iterations to analyse (all, or all but the fill iterations)."""
        if drop_fill:
            return np.flatnonzero(~self.fill)
        return np.arange(self.iterations)

    def at_position(self, position: int) -> np.ndarray:
        """Indices of the iterations at one cycle position: iterations of equal work."""
        if not 0 <= position < self.cycle_length:
            raise AnalysisError(
                f"cycle position {position} is outside 0..{self.cycle_length - 1}; "
                "choose a position inside the restart cycle"
            )
        return np.flatnonzero(self.position == position)

    def middle_position(self) -> int:
        """The position that does the cycle's average work (e.g. 14 of 30, or 16 of 32)."""
        n_fill = int(self.fill[: self.cycle_length].sum()) if self.iterations else 0
        work = self.cycle_length - n_fill
        return n_fill + (work - 1) // 2


def cycle_layout(
    iterations: int, ksp: str, restart: int | None = None, fill_recorded: bool = True
) -> CycleLayout:
    """The cycle layout of ``iterations`` iterations of ``ksp`` with the given restart length.

    ``fill_recorded`` says whether the pipeline-fill iterations of pipelined GMRES appear as
    iterations of their own (cycle ``restart + 2``) or are folded into the first one (cycle
    ``restart``, nothing to drop).
    """
    if iterations < 0:
        raise AnalysisError(f"iterations must be >= 0, got {iterations}")
    name = ksp.lower()
    r = DEFAULT_RESTART if not restart else int(restart)
    if r < 1:
        raise AnalysisError(f"restart must be >= 1, got {restart}; pass PETSc's restart length")
    k = np.arange(iterations, dtype=np.int64)
    if name in PIPELINED_RESTARTED and fill_recorded:
        length = r + FILL_ITERATIONS
        position = k % length
        fill = position < FILL_ITERATIONS
    elif name in RESTARTED_METHODS or name in PIPELINED_RESTARTED:
        length = r
        position = k % length
        fill = np.zeros(iterations, dtype=bool)
    else:
        length = 1
        position = np.zeros(iterations, dtype=np.int64)
        fill = np.zeros(iterations, dtype=bool)
    position.setflags(write=False)
    fill.setflags(write=False)
    return CycleLayout(position=position, cycle_length=length, fill=fill)


def fill_was_recorded(ksp: str, recorded: int, requested: int | None) -> bool:
    """Whether a pipelined-GMRES trace holds the fill iterations as iterations of their own.

    With fills recorded, K recorded exceeds K requested by two per cycle (5334 for 5000 at
    restart 30). A monitor called only on completed iterations records exactly K.
    """
    if ksp.lower() not in PIPELINED_RESTARTED:
        return False
    if requested is None or requested <= 0:
        return True
    return recorded > requested
