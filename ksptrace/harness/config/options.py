"""The declared parameters of one run.

CLI flags, campaign keys and trace attributes all come from these declarations.
"""

from __future__ import annotations

from ksptrace.noise.spec import canonical
from ksptrace.params import INT32_MAX, Param

RUN_PARAMS: tuple[Param, ...] = (
    Param("problem", str, "laplace1d", "problem to solve (see 'ksptrace problems')"),
    Param("n", int, 100_000, "target number of unknowns (global)", minimum=1,
          maximum=INT32_MAX),
    Param("ksp", str, "gmres", "PETSc KSP type: gmres, pgmres, bcgs, pipebcgs or any other"),
    Param("pc", str, "jacobi", "PETSc PC type"),
    Param("iterations", int, 1000, "forced number of Krylov iterations K", minimum=1,
          maximum=100_000_000),
    Param("restart", int, None, "GMRES restart length (PETSc default 30 when unset)", minimum=1,
          maximum=10_000),
    Param("warmup", bool, False, "run one untimed solve before the timed one"),
    Param("hdf5_path", str, "auto", "how the trace is written: mpio, gather, or auto",
          choices=("auto", "mpio", "gather")),
    Param("noise", str, "none",
          "detours injected once per iteration per rank (busy-waits): DIST[:key=value,...], "
          "e.g. 'exponential:scale=20us,p=0.1,seed=1' (see docs/noise.md)",
          canonical=canonical),
)
"""Parameters that define a run (stored as trace attributes under the same names)."""

CHECK_PARAMS: tuple[Param, ...] = (
    Param("allow_unused_options", bool, False,
          "record PETSc options that nothing used in the trace instead of refusing the run"),
    Param("events", bool, False,
          "also time MatMult, PCApply and the vector reductions (VecMDot, VecNorm, VecDot) "
          "per iteration and rank (dataset event_seconds; its cost: docs/benchmarks.md)"),
)
"""How a run is checked and instrumented, not what it measures: CLI flags and trace attributes,
but not part of a run's identity (campaign run ids are computed from RUN_PARAMS)."""
