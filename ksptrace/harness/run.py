"""One instrumented run: build a problem, force K iterations, stamp each one, write the trace.

Runs inside an MPI job (or as a singleton). Every rank executes :func:`execute`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace import __version__
from ksptrace.errors import KsptraceError, SolverError, UsageError
from ksptrace.harness import writer
from ksptrace.harness.monitor import StampMonitor
from ksptrace.harness.mpienv import agree_on_error, fail_together, node_layout
from ksptrace.harness.petscenv import force_solver_env, init_petsc
from ksptrace.problems import registry
from ksptrace.trace import io
from ksptrace.trace.model import AttrValue

GMRES_FAMILY = frozenset({"gmres", "pgmres", "fgmres", "lgmres", "dgmres", "pipefgmres"})
PETSC_DEFAULT_RESTART = 30
DIVTOL_FORCED = 1e300
"""Divergence tolerance for forced runs: never stop because the residual grew."""

LAUNCH_ENV = "KSPTRACE_LAUNCH"
"""JSON set by ``ksptrace run --np``: the launcher, the flags it added and the user's command."""

PROVENANCE_ENV: dict[str, str] = {
    "KSPTRACE_CAMPAIGN_HASH": "campaign_hash",
    "KSPTRACE_RUN_ID": "run_id",
    "KSPTRACE_CAMPAIGN": "campaign",
    "SLURM_JOB_ID": "slurm_job_id",
    "SLURM_ARRAY_JOB_ID": "slurm_array_job_id",
    "SLURM_ARRAY_TASK_ID": "slurm_array_task_id",
    "SLURM_JOB_NAME": "slurm_job_name",
    "PBS_JOBID": "pbs_jobid",
    "PBS_ARRAY_INDEX": "pbs_array_index",
    "PBS_ARRAY_ID": "pbs_array_id",
}
"""Environment variables recorded as trace attributes when present."""


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
    overwrite: bool = False
    problem_options: Mapping[str, Any] = field(default_factory=dict)
    petsc_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunOutcome:
    path: Path
    iterations_done: int
    converged_reason: str
    solve_max: float
    solution_error: float | None
    rank: int
    """This process's rank: callers print on rank 0 only."""


def _type_names(cls: Any) -> set[str]:
    return {v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, str)}


def _reason_name(cls: Any, value: int) -> str:
    names = [k for k, v in vars(cls).items() if not k.startswith("_") and v == value]
    names.sort(key=lambda k: (k in ("ITERATING",), len(k)))
    return names[0] if names else str(value)


def _validate(settings: RunSettings, petsc: Any, nprocs: int, rank: int) -> None:
    ksp_types = _type_names(petsc.KSP.Type)
    if settings.ksp not in ksp_types:
        raise UsageError(
            f"unknown KSP type '{settings.ksp}'; valid types: {', '.join(sorted(ksp_types))}"
        )
    pc_types = _type_names(petsc.PC.Type)
    if settings.pc not in pc_types:
        raise UsageError(
            f"unknown PC type '{settings.pc}'; valid types: {', '.join(sorted(pc_types))}"
        )
    if settings.n < nprocs:
        raise UsageError(f"n = {settings.n} is smaller than P = {nprocs}; use n >= P")
    if rank == 0:
        io.check_destination(settings.out, settings.overwrite)


def _versions(petsc: Any) -> dict[str, AttrValue]:
    import h5py
    import mpi4py
    import petsc4py
    from mpi4py import MPI

    major, minor, patch = petsc.Sys.getVersion()
    return {
        "petsc_version": f"{major}.{minor}.{patch}",
        "petsc4py_version": petsc4py.__version__,
        "mpi4py_version": mpi4py.__version__,
        "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "h5py_version": h5py.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "ksptrace_version": __version__,
    }


def _effective_restart(settings: RunSettings, petsc: Any, ksp: Any) -> int:
    if ksp.getType() not in GMRES_FAMILY:
        return 0
    prefix = ksp.getOptionsPrefix() or ""
    default = settings.restart or PETSC_DEFAULT_RESTART
    return int(petsc.Options().getInt(f"{prefix}ksp_gmres_restart", default))


def execute(settings: RunSettings) -> RunOutcome:
    """Collective over COMM_WORLD: run, and write the trace. Returns on every rank."""
    force_solver_env()
    start_utc = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    petsc = init_petsc(list(settings.petsc_options))
    from mpi4py import MPI

    comm = petsc.COMM_WORLD
    mpicomm = comm.tompi4py()
    rank, nprocs = mpicomm.Get_rank(), mpicomm.Get_size()
    with fail_together(mpicomm):
        error: KsptraceError | None = None
        try:
            _validate(settings, petsc, nprocs, rank)
            info = registry.get(settings.problem)
        except KsptraceError as exc:
            error = exc
        agree_on_error(mpicomm, error)
        petsc.Log.begin()
        layout = node_layout(mpicomm)
        if os.environ.get(writer.FAULT_ENV) == "raise-on-rank-1" and rank == 1:
            raise RuntimeError("injected fault on rank 1 (KSPTRACE_FAULT)")
        instance = info.builder()(comm, settings.n, settings.problem_options)

        ksp = instance.ksp
        ksp.setType(settings.ksp)
        ksp.getPC().setType(settings.pc)
        ksp.setTolerances(rtol=0.0, atol=0.0, divtol=DIVTOL_FORCED, max_it=settings.iterations)
        if settings.restart is not None:
            ksp.setGMRESRestart(settings.restart)
        instance.set_from_options()
        monitor = StampMonitor(settings.iterations + 1, MPI.Wtime)
        ksp.setMonitor(monitor.callback)
        instance.prepare()

        if settings.warmup:
            instance.solve()
            instance.reset()
            monitor.reset()
        event = petsc.Log.Event("KSPSolve")
        mpicomm.Barrier()
        before = event.getPerfInfo()["time"]
        instance.solve()
        solve_seconds = event.getPerfInfo()["time"] - before

        done = int(ksp.getIterationNumber())
        reason = _reason_name(petsc.KSP.ConvergedReason, int(ksp.getConvergedReason()))
        if done < settings.iterations:
            raise SolverError(
                f"{settings.ksp} stopped after {done} of {settings.iterations} iterations "
                f"({reason}); a forced run must not converge: use a larger n or fewer iterations"
            )
        stamps, norms = monitor.recorded(done)

        solution_error = instance.solution_error()
        attrs: dict[str, AttrValue | None] | None = None
        if rank == 0:
            attrs = _attributes(settings, petsc, ksp, instance, layout, nprocs, start_utc)
            attrs.update(
                iterations_done=done,
                monitor_calls=int(stamps.shape[0]),
                converged_reason=reason,
                solution_error=solution_error,
            )
        solves = mpicomm.allgather(solve_seconds)
        attrs = mpicomm.bcast(attrs, root=0)
        assert attrs is not None
        attrs.update(
            solve_max=float(max(solves)),
            solve_min=float(min(solves)),
            solve_mean=float(np.mean(solves)),
        )
        local = writer.LocalRecord(stamps, norms, layout.node_id, layout.hostname, solve_seconds)
        mode = writer.choose_mode(settings.hdf5_path, nprocs)
        attrs["hdf5_path"] = mode
        path = writer.write_distributed(
            mpicomm, settings.out, local, attrs, mode, settings.overwrite
        )
        instance.destroy()
        return RunOutcome(path, done, reason, float(max(solves)), solution_error, rank)
    raise AssertionError("unreachable")  # fail_together either returns or aborts


def _attributes(
    settings: RunSettings,
    petsc: Any,
    ksp: Any,
    instance: Any,
    layout: Any,
    nprocs: int,
    start_utc: str,
) -> dict[str, AttrValue | None]:
    launch = json.loads(os.environ.get(LAUNCH_ENV, "{}") or "{}")
    attrs: dict[str, AttrValue | None] = {
        "problem": settings.problem,
        "n": settings.n,
        "n_global": int(instance.n_global),
        "nnz": int(instance.nnz),
        "ksp": ksp.getType(),
        "ksp_requested": settings.ksp,
        "pc": ksp.getPC().getType(),
        "iterations": settings.iterations,
        "restart": _effective_restart(settings, petsc, ksp),
        "warmup": settings.warmup,
        "nprocs": nprocs,
        "n_nodes": len(set(layout.node_ids)),
        "ranks_per_node": max(layout.node_ids.count(i) for i in set(layout.node_ids)),
        "cpu_count": os.cpu_count() or 0,
        "oversubscribed": layout.oversubscribed,
        "start_utc": start_utc,
        "command_line": launch.get("command_line") or shlex.join(sys.argv),
        "argv": shlex.join(sys.argv),
        "petsc_options": shlex.join(settings.petsc_options),
        "problem_config": json.dumps(
            {k: v for k, v in settings.problem_options.items() if v is not None}, sort_keys=True
        ),
        "launcher": launch.get("launcher", "external" if nprocs > 1 else "none"),
        "launcher_flags": " ".join(launch.get("flags", [])),
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
    }
    attrs.update(_versions(petsc))
    for key, value in settings.problem_options.items():
        attrs.setdefault(key, value)
    attrs.update(instance.attrs())
    for env, key in PROVENANCE_ENV.items():
        if os.environ.get(env):
            attrs[key] = os.environ[env]
    return attrs
