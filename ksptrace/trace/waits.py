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


def wait_share(trace: Trace) -> WaitShare | None:
    """The wait share of ``trace``; None when it holds no wait times."""
    if trace.wait_seconds is None or trace.mpi_calls is None:
        return None
    times = trace.iteration_seconds
    per_rank = trace.wait_seconds.sum(axis=1) / times.sum(axis=1)
    share = float(trace.wait_seconds.sum() / times.sum())
    per_rank.setflags(write=False)
    return WaitShare(share, per_rank, float(np.median(trace.mpi_calls)))
