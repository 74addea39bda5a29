"""A rough cost model for ``campaign plan``: seconds and core-hours of each run.

Per iteration, local work grows with n/P and is weighted by the Krylov method's vector work;
global reductions add a latency term that grows with log2 P. The constants are of the order
of a 2020s CPU core and one interconnect hop; the plan shows orders of magnitude, not promises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ksptrace.collectives.params import message_sizes, parse_bytes, per_octave
from ksptrace.jobs.spec import COLLECTIVES, PROGRAM, RunSpec, SchedulerSpec

SECONDS_PER_UNKNOWN = 4e-9
"""Time of one matrix-vector product row plus a few vector updates on one core."""
REDUCTION_SECONDS = 3e-6
"""Latency of one allreduce step (times log2 P steps)."""
STARTUP_SECONDS = 2.0
"""Launch, PETSc initialisation, set-up and trace writing."""

WORK: dict[str, tuple[float, float]] = {
    "gmres": (2.0, 2.0),
    "pgmres": (2.0, 1.0),
    "fgmres": (2.5, 2.0),
    "bcgs": (3.0, 3.0),
    "pipebcgs": (3.5, 1.0),
    "cg": (1.5, 2.0),
    "pipecg": (2.0, 1.0),
}
"""KSP type -> (vector work, reductions) per iteration, relative to one matvec."""

MATVEC: dict[str, float] = {"laplace1d": 1.0, "iceflow": 36.0}
"""Problem -> cost of one matvec row relative to a 3-point stencil (ex48: 2 dofs, 27 points)."""


@dataclass(frozen=True)
class Cost:
    seconds: float
    nodes: int
    core_hours: float


def _collectives_seconds(run: RunSpec) -> float:
    """Start-up plus, per message size, the calls at REDUCTION_SECONDS per log2 P step and a
    copy of the message at 1 GB/s per step (a coarse bound for shared memory)."""
    op = str(run.param("op"))
    sizes = message_sizes(op, parse_bytes(run.param("min_bytes"), "min"),
                          parse_bytes(run.param("max_bytes"), "max"),
                          per_octave(op, int(run.param("per_octave"))))
    calls = int(run.param("repetitions")) + int(run.param("warmup"))
    steps = max(1.0, math.log2(run.nprocs))
    per_call = sum(steps * (REDUCTION_SECONDS + m * 1e-9) for m in sizes)
    if run.param("op") == "iallreduce_overlap":
        per_call = 3 * per_call + 2 * len(sizes) * float(run.param("compute_us")) * 1e-6
    return STARTUP_SECONDS + calls * per_call


def estimate(run: RunSpec, sched: SchedulerSpec) -> Cost:
    if run.kind in (COLLECTIVES, PROGRAM):  # a program's own cost is unknown: start-up only
        seconds = _collectives_seconds(run) if run.kind == COLLECTIVES else STARTUP_SECONDS
        nodes = sched.nodes(run.nprocs)
        cores = nodes * (sched.cores_per_node or sched.ranks_per_node_for(run.nprocs))
        return Cost(seconds=seconds, nodes=nodes, core_hours=seconds * cores / 3600)
    ksp = str(run.param("ksp"))
    work, reductions = WORK.get(ksp, (2.0, 2.0))
    if ksp in ("gmres", "pgmres", "fgmres"):  # orthogonalisation against ~restart/2 vectors
        restart = run.param("restart") or 30
        work += restart / 2
        reductions += 1
    work += MATVEC.get(str(run.param("problem")), 1.0)
    n, nprocs = int(run.param("n")), run.nprocs
    per_iteration = (SECONDS_PER_UNKNOWN * work * n / nprocs
                     + REDUCTION_SECONDS * reductions * max(1.0, math.log2(nprocs)))
    solves = 2 if run.param("warmup") else 1
    seconds = STARTUP_SECONDS + solves * int(run.param("iterations")) * per_iteration
    nodes = sched.nodes(nprocs)
    cores = nodes * (sched.cores_per_node or sched.ranks_per_node_for(nprocs))
    return Cost(seconds=seconds, nodes=nodes, core_hours=seconds * cores / 3600)
