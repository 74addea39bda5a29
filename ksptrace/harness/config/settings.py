"""What one run is asked to do (:class:`RunSettings`) and what it did (:class:`RunOutcome`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ksptrace.harness.monitoring import cpuload


@dataclass(frozen=True)
class RunSettings:
    """Everything that defines one run, validated."""

    problem: str
    n: int
    ksp: str
    pc: str
    iterations: int
    restart: int | None
    warmup: bool
    hdf5_path: str
    out: Path
    noise: str = "none"
    """Canonical noise spec (ksptrace.noise.spec): detours injected once per iteration."""
    overwrite: bool = False
    problem_options: Mapping[str, Any] = field(default_factory=dict)
    petsc_options: tuple[str, ...] = ()
    allow_unused_options: bool = False
    """Record PETSc options that nothing used instead of refusing the run."""
    events: bool = False
    """Also time PETSc's MatMult, PCApply and vector reductions per iteration (``--events``)."""


@dataclass(frozen=True)
class RunOutcome:
    path: Path
    iterations_done: int
    converged_reason: str
    solve_max: float
    solution_error: float | None
    rank: int
    """This process's rank: callers print on rank 0 only."""
    foreign: cpuload.ForeignLoad | None = None
    """Other processes' CPU use during the solve, on the most contaminated node."""
    monitor_note: str | None = None
    """Why the Python monitor stamped this run when the C one was wanted (None: C, or asked)."""
    events_note: str | None = None
    """With ``--events``: each event's share of the iteration time, and what timing them costs."""
