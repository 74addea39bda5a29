"""One instrumented run: build a problem, force K iterations, stamp each one, write the trace.

Runs inside an MPI job (or as a singleton). Every rank executes :func:`execute`. What a run is
asked is :mod:`.settings`; the solver's set-up and checks are in :mod:`.kspsetup`, the trace's
attributes in :mod:`.provenance`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shlex
from typing import Any

import numpy as np

from ksptrace.errors import KsptraceError, SolverError, UsageError
from ksptrace.harness.config.kspsetup import check_iterations, check_unused, configure, validate
from ksptrace.harness.config.provenance import run_attributes
from ksptrace.harness.config.settings import RunOutcome, RunSettings
from ksptrace.harness.launching import lifeline
from ksptrace.harness.launching.mpienv import NodeLayout, agree_on_error, fail_together, node_layout
from ksptrace.harness.monitoring import cpuload, eventlog, mpiwait, native
from ksptrace.harness.monitoring.monitor import StampMonitor
from ksptrace.harness.monitoring.setuptime import setup_seconds
from ksptrace.harness.petsc import petsc_compat
from ksptrace.harness.petsc.petscenv import (
    force_solver_env,
    init_petsc,
    petsc_error_text,
)
from ksptrace.harness.runner import writer
from ksptrace.harness.runner.noise import DetourPC, wrap_pc
from ksptrace.noise.draw import rank_detours
from ksptrace.noise.spec import parse as parse_noise
from ksptrace.problems import registry
from ksptrace.trace import iteration_events
from ksptrace.trace.model import AttrValue


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
            validate(settings, petsc, nprocs, rank)
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
    ksp = configure(settings, petsc, instance, mpicomm)
    pc_type = ksp.getPC().getType()
    error = None
    counter = None
    try:  # every rank refuses alike (KSPTRACE_MPI_WAITS=on without the interposer)
        counter = mpiwait.counter(settings.events)
    except KsptraceError as exc:
        error = exc
    agree_on_error(mpicomm, error)
    if not all(mpicomm.allgather(counter is not None)):
        counter = None  # every rank writes waits, or none does
    monitor = StampMonitor(settings.iterations + 1, wtime, counter)
    try:  # every rank refuses alike (KSPTRACE_MONITOR=c without a compiler)
        monitor.attach(ksp)
    except KsptraceError as exc:
        error = exc
    agree_on_error(mpicomm, error)
    detour = _inject_noise(settings, petsc, ksp, rank, layout)
    instance.prepare()

    if settings.warmup:
        with petsc_compat.python_errors_as_raised():
            instance.solve()
        instance.reset()
        monitor.reset()
        if detour is not None:
            detour.reset()
    # set up: every event is registered by now (for the log, when the solve needs it)
    log = eventlog.SolveLog(petsc, needs_event=not instance.solve_is_kspsolve)
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    mpicomm.Barrier()
    load_start = cpuload.sample(layout.node_cpus)
    before = log.read()
    entries_before = None if counter is None else counter.by_entry()
    if settings.events and counter is not None:
        counter.reset_spans()  # the set-up's and the warm-up's are not the timed solve's
    with petsc_compat.python_errors_as_raised():  # Ctrl-C stays KeyboardInterrupt
        started = wtime()
        instance.solve()
        ended = wtime()
    spans = counter.spans() if settings.events and counter is not None else None
    after = log.read()
    event_seconds = (None if after.seconds is None or before.seconds is None
                     else after.seconds - before.seconds)
    solve_seconds = ended - started if event_seconds is None or instance.solve_is_kspsolve \
        else event_seconds
    load_end = cpuload.sample(layout.node_cpus)
    samples = mpicomm.allgather((load_start, load_end))
    foreign = cpuload.foreign_load([s for s, _ in samples], [e for _, e in samples],
                                   list(layout.node_ids))

    entries = None if counter is None or entries_before is None else _entry_steps(
        entries_before, counter.by_entry())
    reason = check_iterations(settings, petsc, ksp, monitor)
    done = settings.iterations
    stamps, norms = monitor.recorded(done, settings.ksp)
    waits = monitor.waits(done)
    kinds = None if spans is None else iteration_events.per_iteration(stamps, spans)

    solution_error = instance.solution_error()
    attrs: dict[str, AttrValue | None] | None = None
    if rank == 0:
        attrs = run_attributes(settings, petsc, ksp, instance, layout, nprocs, start_utc)
        attrs.update(
            pc=pc_type,  # the configured PC, not the noise wrapper around it
            noise=settings.noise,
            iterations_done=done,
            petsc_iterations=int(ksp.getIterationNumber()),
            monitor_calls=int(stamps.shape[0]),
            # PETSc's own count of the timed solve's global reductions (-log_view's Reduct
            # column of KSPSolve) and of the split-phase ones of pipelined methods, which that
            # column misses (VecReduceBegin: one MPI_Iallreduce each)
            reductions_blocking=int(after.blocking - before.blocking),
            reductions_split=int(after.split - before.split),
            ksp_solves=(1 if after.solves is None or before.solves is None
                        else int(after.solves - before.solves)),
            converged_reason=reason,
            solution_error=solution_error,
        )
    types = (ksp.getType(), pc_type, ksp.getOptionsPrefix() or "")
    instance.destroy()  # before the check: options read at destroy time count as used
    unused = check_unused(settings, petsc, mpicomm, types)
    solves = mpicomm.allgather(solve_seconds)
    setups = mpicomm.allgather(setup_seconds(solve_seconds, stamps))
    events = mpicomm.allgather(event_seconds)
    impls = set(mpicomm.allgather(monitor.impl))
    all_entries = mpicomm.allgather(entries)
    attrs = mpicomm.bcast(attrs, root=0)
    assert attrs is not None
    attrs.update(
        monitor=impls.pop() if len(impls) == 1 else "mixed",
        monitor_compiler=native.compiler() if monitor.impl == "c" else None,
        solve_max=float(max(solves)),
        solve_min=float(min(solves)),
        solve_mean=float(np.mean(solves)),
        solve_event_max=None if None in events else max(float(e or 0.0) for e in events),
        setup_max=None if None in setups else max(float(x or 0.0) for x in setups),
        solve_time_source=(eventlog.SOLVE_TIME_SOURCE if instance.solve_is_kspsolve
                           else eventlog.EVENT_TIME_SOURCE),
        reductions_source=log.reductions_source,
        event_log=log.event_log,
        petsc_options_unused=shlex.join(f"-{name}" for name in unused),
        allow_unused_options=settings.allow_unused_options,
        events=settings.events,
        event_functions=None if counter is None or not settings.events
        else ",".join(counter.events),
        loadavg_before=loadavg,
        foreign_cpu_share=None if foreign is None else foreign.share,
        foreign_cpu_seconds=None if foreign is None else foreign.seconds,
        foreign_cpu_node=None if foreign is None else foreign.node,
        **_wait_attributes(counter, all_entries),
    )
    injected = None if detour is None else detour.injected[:done].copy()
    local = writer.LocalRecord(stamps, norms, layout.node_id, layout.hostname, solve_seconds,
                               injected, *(waits or (None, None)))
    local = dataclasses.replace(local, event_seconds=kinds)
    shares = None if kinds is None else mpicomm.gather(
        (kinds.sum(axis=0), float(stamps[-1] - stamps[0]), spans.shape[0] if spans is not None
         else 0), root=0)
    mode = writer.choose_mode(settings.hdf5_path, nprocs)
    attrs["hdf5_path"] = mode
    path = writer.write_distributed(
        mpicomm, settings.out, local, attrs, mode, settings.overwrite
    )
    note = None
    if monitor.impl != "c" and native.mode() == "auto":
        note = (f"the C stamping monitor is unavailable ({monitor.why_python}); the Python "
                "monitor stamped this run, about 0.45 us more per iteration (trace attribute "
                "monitor; docs/running.md: the stamping monitor)")
    elif native.build_notes():
        note = "; ".join(native.build_notes())
    return RunOutcome(path, done, reason, float(max(solves)), solution_error, rank, foreign,
                      note, None if shares is None else events_note(shares, done))


def events_note(shares: list[tuple[np.ndarray, float, int]], iterations: int) -> str:
    """The summary line of ``--events``: each kind's share of all ranks' iteration time, and
    the calls timed per iteration with what timing them costs (bench/wait_cost.py)."""
    seconds = np.sum([s for s, _, _ in shares], axis=0)
    total = sum(t for _, t, _ in shares)
    spans = sum(n for _, _, n in shares) / (len(shares) * max(iterations, 1))
    parts = ", ".join(f"{name} {100 * v / total:.1f} %" for name, v in
                      zip(iteration_events.EVENTS, seconds, strict=True)) if total > 0 else "none"
    return (f"events: {parts} of the iteration time; {spans:.1f} calls timed per iteration "
            f"per rank, {EVENTS_COST}")


EVENTS_COST = ("measured cost of --events: +2,406 instructions per iteration, run/bare 1.0247 "
               "with the wait accounting, at 10^3 unknowns (bench/wait_cost.py --events)")
"""The figure of ``bench/results/events_cost.json`` (main thread; every thread: +2,673)."""


def _entry_steps(before: dict[str, tuple[float, float]],
                 after: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """What each entry point carried between two readings (seconds counted, calls)."""
    return {name: (after[name][0] - before[name][0], after[name][1] - before[name][1])
            for name in after}


def _wait_attributes(counter: mpiwait.WaitCounter | None,
                     entries: list[dict[str, tuple[float, float]] | None]
                     ) -> dict[str, AttrValue | None]:
    """The trace attributes of the wait accounting: how, through which entry points, and what
    each carried in the timed solve (summed over the ranks)."""
    if counter is None or any(e is None for e in entries):
        return {"wait_accounting": f"none ({mpiwait.why_none()})"}
    shown = []
    for name in counter.entry_points:
        seconds = sum(e[name][0] for e in entries if e is not None)
        calls = sum(e[name][1] for e in entries if e is not None)
        if calls:
            shown.append(f"{name} {calls:.0f} calls {seconds:.6g} s")
    return {
        "wait_accounting": mpiwait.ACCOUNTING,
        "wait_entry_points": ",".join(counter.entry_points),
        "wait_by_entry": "; ".join(shown) or "no call",
    }


def _inject_noise(
    settings: RunSettings, petsc: Any, ksp: Any, rank: int, layout: NodeLayout
) -> DetourPC | None:
    """Wrap the configured PC in the detour injector when the run has active noise (every rank
    refuses alike noise that names a rank or node the run does not have)."""
    spec = parse_noise(settings.noise)
    if not spec.active:
        return None
    problem = spec.run_problem() or spec.reach_problem(len(layout.node_ids),
                                                       len(set(layout.node_ids)))
    if problem is not None:
        raise UsageError(problem)
    return wrap_pc(petsc, ksp, rank_detours(spec, rank, layout.node_id, settings.iterations + 1))
