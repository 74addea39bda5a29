"""One instrumented run: build a problem, force K iterations, stamp each one, write the trace.

Runs inside an MPI job (or as a singleton). Every rank executes :func:`execute`.
"""

from __future__ import annotations

import datetime as dt
import difflib
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

from ksptrace.errors import KsptraceError, SolverError, UsageError
from ksptrace.harness import cpuload, eventlog, lifeline, native, writer
from ksptrace.harness.monitor import StampMonitor
from ksptrace.harness.mpienv import agree_on_error, fail_together, node_layout
from ksptrace.harness.noise import DetourPC, wrap_pc
from ksptrace.harness.petscenv import (
    file_option_problem,
    finalize_value_problem,
    force_solver_env,
    init_petsc,
    known_option_names,
    petsc_error_text,
    unused_options,
)
from ksptrace.noise.draw import rank_detours
from ksptrace.noise.spec import parse as parse_noise
from ksptrace.params import nearest
from ksptrace.problems import registry
from ksptrace.trace import publish
from ksptrace.trace.model import AttrValue
from ksptrace.version import __version__

GMRES_FAMILY = frozenset({"gmres", "pgmres", "fgmres", "lgmres", "dgmres", "pipefgmres"})
PETSC_DEFAULT_RESTART = 30
DIVTOL_FORCED = 1e300
"""Divergence tolerance for forced runs: never stop because the residual grew."""

UNTRACEABLE_KSP: dict[str, str] = {
    "preonly": "applies the preconditioner once and has no Krylov iterations to force",
    "none": "applies the preconditioner once and has no Krylov iterations to force",
    "python": "runs a Python KSP implementation (-ksp_python_type) that ksptrace cannot supply",
    "fetidp": "needs a MATIS operator (FETI-DP substructuring); ksptrace's problems assemble AIJ",
    "tsirm": "needs -pc_type ksp: its iterations are inner KSP solves, not Krylov iterations",
}
"""KSP types that can never be forced to K timed iterations, and why."""

EXTRA_ITERATIONS: dict[str, int] = {"qcg": 1}
"""Types that run max_it + n iterations (qcg: ``for (i = 0; i <= maxit; i++)`` in PETSc 3.18);
ksptrace asks them for K - n so that they run K."""

TRACE_HINTS: dict[str, str] = {
    "bcgsl": "or -ksp_bcgsl_ell 1, with which bcgsl (BiCGStab(1)) reports every iteration",
}
"""What makes a type that the monitor cannot follow traceable after all."""

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
    noise: str = "none"
    """Canonical noise spec (ksptrace.noise.spec): detours injected once per iteration."""
    overwrite: bool = False
    problem_options: Mapping[str, Any] = field(default_factory=dict)
    petsc_options: tuple[str, ...] = ()
    allow_unused_options: bool = False
    """Record PETSc options that nothing used instead of refusing the run."""


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


def _type_names(cls: Any) -> set[str]:
    return {v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, str)}


def _reason_name(cls: Any, value: int) -> str:
    names = [k for k, v in vars(cls).items() if not k.startswith("_") and v == value]
    names.sort(key=lambda k: (k in ("ITERATING",), len(k)))
    return names[0] if names else str(value)


def _unknown_type(kind: str, name: str, valid: set[str]) -> UsageError:
    near = nearest(name, valid)
    hint = f"did you mean '{near}'? " if near else ""
    listed = ", ".join(sorted(valid))
    return UsageError(f"unknown {kind} type '{name}'; {hint}valid types: {listed}")


def _validate(settings: RunSettings, petsc: Any, nprocs: int, rank: int) -> None:
    ksp_types = _type_names(petsc.KSP.Type)
    if settings.ksp not in ksp_types:
        raise _unknown_type("KSP", settings.ksp, ksp_types)
    pc_types = _type_names(petsc.PC.Type)
    if settings.pc not in pc_types:
        raise _unknown_type("PC", settings.pc, pc_types)
    if settings.ksp in UNTRACEABLE_KSP:
        raise UsageError(
            f"KSP type '{settings.ksp}' cannot be traced: it {UNTRACEABLE_KSP[settings.ksp]}; "
            "use a Krylov method such as gmres, cg or bcgs"
        )
    if settings.n < nprocs:
        raise UsageError(f"n = {settings.n} is smaller than P = {nprocs}; use n >= P")
    options = petsc.Options()
    for name, value in options.getAll().items():
        problem = file_option_problem(name, value) or finalize_value_problem(petsc, name)
        if problem is not None:
            options.delValue(f"-{name}")  # or PetscFinalize fails on it once more
            raise UsageError(f"{problem} (PETSc uses it at exit, after the trace is written)")
    if rank == 0:
        publish.check_destination(settings.out, settings.overwrite)


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


def _configure(settings: RunSettings, petsc: Any, instance: Any, mpicomm: Any) -> Any:
    """Code defaults on the problem's KSP, then the user's PETSc options; refuse options that
    contradict --ksp or --pc (the trace and its file name must say what ran)."""
    ksp = instance.ksp
    try:
        ksp.setType(settings.ksp)
        ksp.getPC().setType(settings.pc)
    except petsc.Error as exc:
        raise UsageError(
            f"KSP '{settings.ksp}' with PC '{settings.pc}' is not available in this PETSc "
            f"build ({petsc_error_text(exc)}); pick another type"
        ) from None
    max_it = max(settings.iterations - EXTRA_ITERATIONS.get(settings.ksp, 0), 0)
    ksp.setTolerances(rtol=0.0, atol=0.0, divtol=DIVTOL_FORCED, max_it=max_it)
    if settings.restart is not None:
        ksp.setGMRESRestart(settings.restart)
    instance.set_from_options()
    error: KsptraceError | None = None
    prefix = ksp.getOptionsPrefix() or ""
    for kind, wanted, got, flag in (("KSP", settings.ksp, ksp.getType(), "--ksp"),
                                    ("PC", settings.pc, ksp.getPC().getType(), "--pc")):
        if got != wanted:
            option = f"-{prefix}{kind.lower()}_type"
            error = UsageError(
                f"the PETSc options make the {kind} {got} but {flag} is {wanted}; "
                f"give the type once, with {flag} {got}, and drop {option}"
            )
            break
    agree_on_error(mpicomm, error)
    return ksp


def _check_iterations(settings: RunSettings, petsc: Any, ksp: Any, monitor: StampMonitor) -> str:
    """Raise a SolverError unless the monitor saw exactly iterations 0..K; returns the reason.

    Pipelined CG-type methods (pipecg, pipecr, pipecgrr, pipeprcg, ibcgs) count one more
    iteration than they report: their last pass reports iteration K, then updates the solution
    once more. The trace holds what the monitor reported, as PETSc's -ksp_monitor numbers it.
    """
    done = int(ksp.getIterationNumber())
    code = int(ksp.getConvergedReason())
    reason = _reason_name(petsc.KSP.ConvergedReason, code)
    try:
        monitor.check(settings.ksp, min(done, settings.iterations))
    except SolverError as exc:
        hint = TRACE_HINTS.get(settings.ksp)
        if hint is None:
            raise
        raise SolverError(f"{exc}, {hint}") from None
    if done < settings.iterations:
        if code > 0:
            why = "a forced run must not converge: use a larger n or fewer iterations"
        elif reason in ("DIVERGED_ITS", "DIVERGED_MAX_IT"):
            why = "its iteration limit was lower: remove -ksp_max_it from the PETSc options"
        else:
            why = (f"{settings.ksp} broke down on this problem and cannot be forced to "
                   f"{settings.iterations} iterations: use fewer iterations or another KSP or PC")
        raise SolverError(
            f"{settings.ksp} stopped after {done} of {settings.iterations} iterations "
            f"({reason}); {why}"
        )
    return reason


def _check_unused(
    settings: RunSettings, petsc: Any, mpicomm: Any, ksp_types: tuple[str, str, str]
) -> list[str]:
    """Collective: the options no rank used; refuses them unless --allow-unused-options."""
    found = mpicomm.allgather(unused_options(petsc))
    unused = sorted(set(found[0]).intersection(*found[1:]))
    error: KsptraceError | None = None
    if unused and not settings.allow_unused_options and mpicomm.Get_rank() == 0:
        known = [n for n in known_option_names(petsc, *ksp_types) if n not in unused]
        named = []
        for name in unused:
            near = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            named.append(f"-{name}" + (f" (did you mean -{near[0]}?)" if near else ""))
        error = UsageError(
            f"PETSc never used {', '.join(named)}; no trace written: correct or remove "
            f"{'it' if len(unused) == 1 else 'them'}, or pass --allow-unused-options to record "
            "unused options in the trace"
        )
    agree_on_error(mpicomm, error)
    return unused


def execute(settings: RunSettings) -> RunOutcome:
    """Collective over COMM_WORLD: run, and write the trace. Returns on every rank."""
    lifeline.start_watchdog()  # an orphaned rank stops instead of solving on to the end
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
        layout = node_layout(mpicomm)
        if os.environ.get(writer.FAULT_ENV) == "raise-on-rank-1" and rank == 1:
            raise RuntimeError("injected fault on rank 1 (KSPTRACE_FAULT)")
        try:
            return _solve_and_write(settings, petsc, info, layout, mpicomm, start_utc, MPI.Wtime)
        except petsc.Error as exc:
            raise SolverError(
                f"{petsc_error_text(exc)}; check the PETSc options and --ksp/--pc"
            ) from None
    raise AssertionError("unreachable")  # fail_together either returns or aborts


def _solve_and_write(
    settings: RunSettings,
    petsc: Any,
    info: Any,
    layout: Any,
    mpicomm: Any,
    start_utc: str,
    wtime: Any,
) -> RunOutcome:
    rank, nprocs = mpicomm.Get_rank(), mpicomm.Get_size()
    instance = None
    error: KsptraceError | None = None
    try:  # every rank refuses a bad build alike (a user problem's build, n < P)
        instance = info.build(petsc.COMM_WORLD, settings.n, settings.problem_options)
    except KsptraceError as exc:
        error = exc
    agree_on_error(mpicomm, error)
    assert instance is not None
    ksp = _configure(settings, petsc, instance, mpicomm)
    pc_type = ksp.getPC().getType()
    monitor = StampMonitor(settings.iterations + 1, wtime)
    error = None
    try:  # every rank refuses alike (KSPTRACE_MONITOR=c without a compiler)
        monitor.attach(ksp)
    except KsptraceError as exc:
        error = exc
    agree_on_error(mpicomm, error)
    detour = _inject_noise(settings, petsc, ksp, rank, layout.node_id)
    instance.prepare()

    if settings.warmup:
        instance.solve()
        instance.reset()
        monitor.reset()
        if detour is not None:
            detour.reset()
    event_log = eventlog.keep_only_needed(petsc)  # set up: every event is registered by now
    event = petsc.Log.Event("KSPSolve")
    split_event = petsc.Log.Event("VecReduceBegin")
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    mpicomm.Barrier()
    load_start = cpuload.sample(layout.node_cpus)
    before, split_before = event.getPerfInfo(), split_event.getPerfInfo()
    started = wtime()
    instance.solve()
    ended = wtime()
    after, split_after = event.getPerfInfo(), split_event.getPerfInfo()
    event_seconds = after["time"] - before["time"]
    solve_seconds = ended - started if instance.solve_is_kspsolve else event_seconds
    load_end = cpuload.sample(layout.node_cpus)
    samples = mpicomm.allgather((load_start, load_end))
    foreign = cpuload.foreign_load([s for s, _ in samples], [e for _, e in samples],
                                   list(layout.node_ids))

    reason = _check_iterations(settings, petsc, ksp, monitor)
    done = settings.iterations
    stamps, norms = monitor.recorded(done, settings.ksp)

    solution_error = instance.solution_error()
    attrs: dict[str, AttrValue | None] | None = None
    if rank == 0:
        attrs = _attributes(settings, petsc, ksp, instance, layout, nprocs, start_utc)
        attrs.update(
            pc=pc_type,  # the configured PC, not the noise wrapper around it
            noise=settings.noise,
            iterations_done=done,
            petsc_iterations=int(ksp.getIterationNumber()),
            monitor_calls=int(stamps.shape[0]),
            # PETSc's own count of the timed solve's global reductions (-log_view's Reduct
            # column of KSPSolve) and of the split-phase ones of pipelined methods, which that
            # column misses (VecReduceBegin: one MPI_Iallreduce each)
            reductions_blocking=int(after["numReductions"] - before["numReductions"]),
            reductions_split=int(split_after["count"] - split_before["count"]),
            ksp_solves=int(after["count"] - before["count"]),
            converged_reason=reason,
            solution_error=solution_error,
        )
    types = (ksp.getType(), pc_type, ksp.getOptionsPrefix() or "")
    instance.destroy()  # before the check: options read at destroy time count as used
    unused = _check_unused(settings, petsc, mpicomm, types)
    solves = mpicomm.allgather(solve_seconds)
    events = mpicomm.allgather(event_seconds)
    impls = set(mpicomm.allgather(monitor.impl))
    attrs = mpicomm.bcast(attrs, root=0)
    assert attrs is not None
    attrs.update(
        monitor=impls.pop() if len(impls) == 1 else "mixed",
        solve_max=float(max(solves)),
        solve_min=float(min(solves)),
        solve_mean=float(np.mean(solves)),
        solve_event_max=float(max(events)),
        solve_time_source=(eventlog.SOLVE_TIME_SOURCE if instance.solve_is_kspsolve
                           else "PETSc's KSPSolve event on each rank"),
        reductions_source=eventlog.REDUCTIONS_SOURCE,
        event_log=event_log,
        petsc_options_unused=shlex.join(f"-{name}" for name in unused),
        allow_unused_options=settings.allow_unused_options,
        loadavg_before=loadavg,
        foreign_cpu_share=None if foreign is None else foreign.share,
        foreign_cpu_seconds=None if foreign is None else foreign.seconds,
        foreign_cpu_node=None if foreign is None else foreign.node,
    )
    injected = None if detour is None else detour.injected[:done].copy()
    local = writer.LocalRecord(stamps, norms, layout.node_id, layout.hostname, solve_seconds,
                               injected)
    mode = writer.choose_mode(settings.hdf5_path, nprocs)
    attrs["hdf5_path"] = mode
    path = writer.write_distributed(
        mpicomm, settings.out, local, attrs, mode, settings.overwrite
    )
    note = None
    if monitor.impl != "c" and native.mode() == "auto":
        note = (f"the C stamping monitor is unavailable ({monitor.why_python}); the Python "
                "monitor stamped this run, about 0.45 us more per iteration (trace attribute "
                "monitor; README: the stamping monitor)")
    elif native.build_notes():
        note = "; ".join(native.build_notes())
    return RunOutcome(path, done, reason, float(max(solves)), solution_error, rank, foreign,
                      note)


def _inject_noise(
    settings: RunSettings, petsc: Any, ksp: Any, rank: int, node_id: int
) -> DetourPC | None:
    """Wrap the configured PC in the detour injector when the run has active noise."""
    spec = parse_noise(settings.noise)
    if not spec.active:
        return None
    problem = spec.run_problem()
    if problem is not None:
        raise UsageError(problem)
    return wrap_pc(petsc, ksp, rank_detours(spec, rank, node_id, settings.iterations + 1))


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
