"""The KSP monitor that stamps MPI.Wtime() at every iteration, with no allocation per call.

The callback is a closure whose arrays, clock and capacity are bound as default arguments, so a
call does two stores into preallocated numpy arrays: about 0.15 us on top of
petsc4py's own 0.3 us per monitor call (see bench/overhead.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ksptrace.errors import SolverError

MonitorCallback = Callable[[Any, int, float], None]


def _stamping_callback(
    stamps: np.ndarray, norms: np.ndarray, beyond: list[int], wtime: Callable[[], float]
) -> MonitorCallback:
    def monitor(
        ksp: Any,
        its: int,
        rnorm: float,
        st: np.ndarray = stamps,
        nr: np.ndarray = norms,
        w: Callable[[], float] = wtime,
        b: list[int] = beyond,
    ) -> None:
        try:  # free when nothing is raised (Python >= 3.11), unlike a bounds test
            st[its] = w()
            nr[its] = rnorm
        except IndexError:  # more iterations than forced: check() reports it
            b[0] = max(b[0], its)

    return monitor


class StampMonitor:
    """Wall-clock time and residual norm of every iteration, in preallocated arrays.

    ``stamps[k]`` is the time at which the KSP reported iteration ``k`` (``k = 0`` before the
    first iteration), as PETSc's own ``-ksp_monitor`` numbers them. A method that reported one
    iteration number twice (tfqmr's two half steps) keeps the later report. Slots start as NaN,
    so an iteration that was never reported is detected rather than read as zero.
    """

    __slots__ = ("beyond", "callback", "norms", "stamps")

    def __init__(self, capacity: int, wtime: Callable[[], float]) -> None:
        self.stamps = np.full(capacity, np.nan)
        self.norms = np.full(capacity, np.nan)
        self.beyond = [0]
        """The highest iteration number reported beyond the capacity (0: none)."""
        self.callback: MonitorCallback = _stamping_callback(
            self.stamps, self.norms, self.beyond, wtime
        )

    def reset(self) -> None:
        self.stamps.fill(np.nan)
        self.norms.fill(np.nan)
        self.beyond[0] = 0

    def check(self, ksp_type: str, upto: int) -> None:
        """Raise a SolverError that says why, unless iterations 0..``upto`` were all reported
        and none beyond the capacity."""
        forced = self.stamps.shape[0] - 1
        upto = min(upto, forced)
        seen = np.flatnonzero(~np.isnan(self.stamps[: upto + 1]))
        steps = np.unique(np.diff(seen))
        if seen.size >= 2 and seen[0] == 0 and steps.size == 1 and steps[0] > 1:
            shown = ", ".join(str(int(i)) for i in seen[:4])
            raise SolverError(
                f"{ksp_type} reports only one iteration in {int(steps[0])} to the monitor "
                f"({shown}, ...), so single iterations cannot be timed; use another KSP type"
            )
        if self.beyond[0]:
            raise SolverError(
                f"{ksp_type} reported iteration {self.beyond[0]}, more than the {forced} "
                "forced; remove -ksp_max_it from the PETSc options"
            )
        if seen.size == upto + 1:
            return
        missing = int(np.flatnonzero(np.isnan(self.stamps[: upto + 1]))[0])
        raise SolverError(
            f"{ksp_type} never reported iteration {missing} of 0..{upto} to the monitor"
            f"{' (the start of the first iteration)' if missing == 0 else ''}, so it cannot "
            "be timed per iteration; use another KSP type"
        )

    def recorded(
        self, iterations: int, ksp_type: str = "the KSP"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the stamps and norms of iterations 0..``iterations``, once check() passes."""
        count = iterations + 1
        if count > self.stamps.shape[0]:
            self.beyond[0] = max(self.beyond[0], iterations)
        self.check(ksp_type, iterations)
        return self.stamps[:count].copy(), self.norms[:count].copy()
