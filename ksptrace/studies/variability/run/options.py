"""What a user chooses for the per-trace analysis (:class:`AnalysisOptions`) and how progress is
reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ksptrace.errors import UsageError
from ksptrace.studies.variability.stats import ks
from ksptrace.studies.variability.stats.choices import DEFAULT_CANDIDATES, INDEPENDENT_UNITS

Progress = Callable[[str, float], None]
"""Called with (step name, fraction done of that step)."""




@dataclass(frozen=True)
class AnalysisOptions:
    """Knobs of the analysis, each with its default."""

    alpha: float = 0.05
    """Significance level of the KS tests."""
    reference_rank: int = 0
    """Rank tested against all others."""
    candidates: tuple[str, ...] = DEFAULT_CANDIDATES
    """Distribution families fitted to the bulk data."""
    fit_size: int | None = 10_000
    """Fit on a seeded subsample of this many values (None: all values)."""
    bins: int = 200
    independent: str = "auto"
    """Independent units in the max: 'nodes' (N = the trace's node count), 'ranks' (N = P) or
    'auto': ranks for a trace from one node (on one node, N = 1 would make every model K times
    the mean), nodes for a trace from several."""
    drop_fill: bool = True
    """Drop pipelined GMRES's pipeline-fill iterations from bulk statistics."""
    mc_runs: int = 16
    seed: int = 0
    iteration: int | None = None
    """Iteration for per-iteration node variances (default: a mid-cycle one)."""
    pool_solves: bool = False
    """In a trace of several solves, analyse the solves of each length together (one after
    the other) instead of each solve on its own."""

    def __post_init__(self) -> None:
        if self.independent not in INDEPENDENT_UNITS:
            raise UsageError(
                f"independent must be one of {', '.join(INDEPENDENT_UNITS)}, "
                f"got {self.independent!r}"
            )
        if self.mc_runs < 1:
            raise UsageError(f"mc_runs must be >= 1, got {self.mc_runs}")
        ks.critical_value(self.alpha)


def units(independent: str, n_nodes: int, nprocs: int) -> int:
    """N for ``--independent`` ``independent``: the node count, P, or ("auto") P on one node
    and the node count on several."""
    if independent == "nodes" or (independent == "auto" and n_nodes > 1):
        return n_nodes
    return nprocs
