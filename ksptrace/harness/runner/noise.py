"""Injecting detours into a running solve: a busy-wait once per iteration, inside the PC.

The KSP's configured preconditioner (every PETSc option already applied) is wrapped in a
Python PC that applies it unchanged and then spins for the iteration's detour. The detour thus
falls between the global reductions, where a pipelined method can hide it, and the arithmetic is
untouched, so the residual history is bit-identical to the noise-free run.

Which iteration a PC application belongs to is told by a KSP monitor: after the monitor reports
iteration k, the next PC application spins for ``detours[k]`` (and the ones after it in the same
iteration do not). The detour is a busy-wait on ``time.perf_counter``, never a sleep: a sleep
yields the core, which on an oversubscribed machine changes everything. The time actually spent
spinning is recorded per iteration (``injected``), so the analysis can tell injected from
natural variability.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def spin(seconds: float, clock: Any = time.perf_counter) -> float:
    """Busy-wait ``seconds``; returns the time actually spent (at least ``seconds``)."""
    start = clock()
    now = start
    while now - start < seconds:  # not now < start + seconds: that sum rounds, and the spin
        now = clock()             # could end (and report) an ulp of the clock short
    return now - start


class DetourPC:
    """Context of a petsc4py Python PC that applies ``inner`` and then the pending detour."""

    def __init__(self, inner: Any, detours: np.ndarray) -> None:
        self.inner = inner
        self.detours = np.asarray(detours, dtype=float)
        self.injected = np.zeros_like(self.detours)
        """Seconds actually spun, by the iteration whose monitor call armed them."""
        self.pending = -1

    # -- the monitor that arms one detour per iteration ---------------------------------------
    def monitor(self, ksp: Any, its: int, rnorm: float) -> None:
        self.pending = its if 0 <= its < self.detours.shape[0] else -1

    def reset(self) -> None:
        self.injected.fill(0.0)
        self.pending = -1

    def _detour(self) -> None:
        k = self.pending
        if k >= 0:
            self.pending = -1
            seconds = self.detours[k]
            if seconds > 0.0:
                self.injected[k] += spin(float(seconds))

    # -- the PC interface petsc4py calls -------------------------------------------------------
    def setUp(self, pc: Any) -> None:  # petsc4py calls these names
        self.inner.setUp()

    def apply(self, pc: Any, x: Any, y: Any) -> None:
        self.inner.apply(x, y)
        self._detour()

    def applyTranspose(self, pc: Any, x: Any, y: Any) -> None:
        self.inner.applyTranspose(x, y)
        self._detour()

    def applySymmetricLeft(self, pc: Any, x: Any, y: Any) -> None:
        self.inner.applySymmetricLeft(x, y)
        self._detour()

    def applySymmetricRight(self, pc: Any, x: Any, y: Any) -> None:
        self.inner.applySymmetricRight(x, y)

    def view(self, pc: Any, viewer: Any) -> None:
        self.inner.view(viewer)


def wrap_pc(petsc: Any, ksp: Any, detours: np.ndarray) -> DetourPC:
    """Replace ``ksp``'s configured PC by a detour-injecting wrapper; call after setFromOptions.

    Returns the context, whose ``injected`` holds the detours actually spun.
    """
    inner = ksp.getPC()  # the petsc4py object holds a reference: the wrapper keeps it alive
    ctx = DetourPC(inner, detours)
    outer = petsc.PC().createPython(ctx, comm=ksp.getComm())
    outer.setOperators(*inner.getOperators())
    ksp.setPC(outer)
    ksp.setMonitor(ctx.monitor)  # appended after the stamping monitor: stamps come first
    return ctx
