"""How much of a run's iteration time its ranks spent waiting in MPI reductions.

Pure: a :class:`~ksptrace.trace.model.Trace` with ``wait_seconds`` in, a frozen summary out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.trace.model import Trace


@dataclass(frozen=True)
class WaitShare:
    """The share of iteration time spent inside MPI reductions."""

    share: float
    """All ranks' wait over all ranks' iteration time."""
    per_rank: np.ndarray
    """float64 [P]: each rank's wait over its own iteration time."""
    reductions_per_iteration: float
    """The median of ``mpi_calls`` over ranks and iterations."""

    @property
    def most_waiting_rank(self) -> int:
        return int(np.argmax(self.per_rank))

    @property
    def least_waiting_rank(self) -> int:
        """The rank that waited the smallest share of its time: in a method that reduces
        every iteration, the one most often late, whom the others waited for."""
        return int(np.argmin(self.per_rank))


def wait_share(trace: Trace) -> WaitShare | None:
    """The wait share of ``trace``; None when it holds no wait times."""
    if trace.wait_seconds is None or trace.mpi_calls is None:
        return None
    times = trace.iteration_seconds
    per_rank = trace.wait_seconds.sum(axis=1) / times.sum(axis=1)
    share = float(trace.wait_seconds.sum() / times.sum())
    per_rank.setflags(write=False)
    return WaitShare(share, per_rank, float(np.median(trace.mpi_calls)))


@dataclass(frozen=True)
class VarianceSplit:
    """Var(T) over every rank and iteration, split by T = own work + wait: the shares of
    Var(own work), Var(wait) and 2 Cov(own work, wait), which add up to 1 (the covariance's
    share is negative when long waits go with short own work, as they do when a rank waits
    for one that works longer)."""

    own: float
    wait: float
    covariance: float


def variance_split(trace: Trace) -> VarianceSplit | None:
    """How the variance of ``trace``'s iteration times splits into its ranks' own work and
    their waits in MPI reductions; None without wait times or when the times do not vary."""
    if trace.wait_seconds is None:
        return None
    times = np.asarray(trace.iteration_seconds, dtype=np.float64).ravel()
    waits = np.asarray(trace.wait_seconds, dtype=np.float64).ravel()
    own = times - waits
    total = float(np.var(times))
    if not np.isfinite(total) or total <= 0:
        return None
    cov = float(np.mean((own - own.mean()) * (waits - waits.mean())))
    return VarianceSplit(float(np.var(own)) / total, float(np.var(waits)) / total,
                         2 * cov / total)
