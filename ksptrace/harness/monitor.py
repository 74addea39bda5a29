"""The KSP monitor that stamps MPI.Wtime() at every iteration, with no allocation per call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ksptrace.errors import SolverError


class StampMonitor:
    """Records the wall-clock time and residual norm at each monitor call into preallocated arrays.

    Calls are counted rather than indexed by the iteration number the KSP passes, so that a
    method that reports an iteration number twice cannot overwrite a stamp.
    """

    __slots__ = ("_wtime", "count", "norms", "stamps")

    def __init__(self, capacity: int, wtime: Callable[[], float]) -> None:
        self.stamps = np.zeros(capacity, dtype=np.float64)
        self.norms = np.zeros(capacity, dtype=np.float64)
        self.count = 0
        self._wtime = wtime

    def __call__(self, ksp: Any, its: int, rnorm: float) -> None:
        t = self._wtime()
        c = self.count
        if c < self.stamps.shape[0]:
            self.stamps[c] = t
            self.norms[c] = rnorm
        self.count = c + 1

    def reset(self) -> None:
        self.count = 0

    def recorded(self) -> tuple[np.ndarray, np.ndarray]:
        """The stamps and norms of the calls made since the last reset."""
        if self.count > self.stamps.shape[0]:
            raise SolverError(
                f"the KSP monitor was called {self.count} times, more than the "
                f"{self.stamps.shape[0]} slots reserved; report this with the KSP type used"
            )
        return self.stamps[: self.count].copy(), self.norms[: self.count].copy()
