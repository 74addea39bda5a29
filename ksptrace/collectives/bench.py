"""The collectives microbenchmark: time one operation over message sizes on every rank.

Timing discipline (as mpi4py's bench): for every repetition the output is reset, all ranks
meet in a barrier, and each rank stamps ``MPI.Wtime`` just before and just after the call;
warm-up calls are run and checked but not kept. Every repetition's values are checked after
the stamp. Raw per-rank, per-repetition times go into one collectives trace, gathered to rank
0 and written atomically.

The overlapped Iallreduce (``iallreduce_overlap``) times three things in each repetition,
barrier-separated: Iallreduce + Wait alone (``comm_seconds``), the local compute alone
(``compute_seconds``) and Iallreduce, compute (with MPI_Test between chunks), Wait
(``seconds``). The overlap achieved is (comm + compute - overlapped) / min(comm, compute).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.collectives import eta, fallbacks, kernel, mpich_default
from ksptrace.collectives.algorithms import Forcing
from ksptrace.collectives.held import held_forcing, probes_default, what_ran
from ksptrace.collectives.mpistart import thread_level
from ksptrace.collectives.operations import (
    REDUCING,
    Compute,
    Prepared,
    calibrate,
    local_reduce_seconds_per_byte,
    prepare,
)
from ksptrace.collectives.plogp import PARTS, time_plogp
from ksptrace.errors import KsptraceError, OutputError, UsageError, WrongResult
from ksptrace.harness.launching import lifeline
from ksptrace.harness.launching.mpienv import agree_on_error, node_layout
from ksptrace.trace import collectives as ctrace
from ksptrace.trace import publish
from ksptrace.trace.model import AttrValue
from ksptrace.version import __version__

LAUNCH_ENV = "KSPTRACE_LAUNCH"
"""The same JSON ``ksptrace run --np`` passes: launcher, flags, the user's command line."""
FAULT_ENV = "KSPTRACE_FAULT"
"""Fault injection for tests: 'wrong-result-on-rank-1' makes rank 1's checks fail;
'raise-on-rank-1' makes rank 1 raise an unexpected exception mid-run."""
PROVENANCE_ENV = {"KSPTRACE_CAMPAIGN_HASH": "campaign_hash", "KSPTRACE_RUN_ID": "run_id",
                  "KSPTRACE_REPETITION": "repetition",
                  "KSPTRACE_CAMPAIGN": "campaign", "SLURM_JOB_ID": "slurm_job_id",
                  "PBS_JOBID": "pbs_jobid"}


@dataclass(frozen=True)
class BenchSettings:
    operation: str
    sizes: tuple[int, ...]
    repetitions: int
    warmup: int
    forcing: Forcing
    out: Path
    overwrite: bool = False
    compute_seconds: float = 0.0
    """Local compute per repetition of ``iallreduce_overlap``."""
    test_calls: int = 0
    """MPI_Test calls spread through that compute (they let libnbc progress)."""
    mode: str = "per-call"
    """``per-call`` (barrier-separated, in Python) or ``back-to-back`` (C kernel)."""
    calls: int = 1
    """Back-to-back calls per repetition."""
    quiet: bool = False
    """No estimate, no probe, no progress lines (:mod:`ksptrace.collectives.eta`)."""


@dataclass(frozen=True)
class Timings:
    seconds: np.ndarray
    """[M, R] on this rank."""
    comm_seconds: np.ndarray | None = None
    compute_seconds: np.ndarray | None = None
    compute_units: int = 0
    parts: dict[str, np.ndarray] | None = None
    """plogp: each of plogp.PARTS, [M, R] on this rank."""
    attrs: dict[str, AttrValue] | None = None
    """Attributes the measurement sets (plogp: ``plogp_timing``, which path timed it)."""


def time_calls(comm: Any, prepared: Prepared, repetitions: int, warmup: int,
               wtime: Callable[[], float]) -> tuple[np.ndarray, str | None]:
    """Barrier-separated, checked calls; the kept times and the first wrong result."""
    out = np.empty(repetitions)
    wrong: str | None = None
    call, reset, check, barrier = prepared.call, prepared.reset, prepared.check, comm.Barrier
    for i in range(warmup + repetitions):
        reset()
        barrier()
        t0 = wtime()
        call()
        t1 = wtime()
        if i >= warmup:
            out[i - warmup] = t1 - t0
        if wrong is None:
            wrong = check()
    return out, wrong


def time_overlap(comm: Any, prepared: Prepared, compute: Compute, repetitions: int,
                 warmup: int, wtime: Callable[[], float]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str | None]:
    """Overlapped, comm-alone and compute-alone times of each repetition."""
    both, alone, work = (np.empty(repetitions) for _ in range(3))
    start = prepared.start
    if start is None:
        raise ValueError("time_overlap needs a non-blocking operation (Prepared.start)")
    wrong: str | None = None
    for i in range(warmup + repetitions):
        prepared.reset()
        comm.Barrier()
        t0 = wtime()
        prepared.call()
        t1 = wtime()
        wrong = wrong or prepared.check()
        comm.Barrier()
        t2 = wtime()
        compute.run(None)
        t3 = wtime()
        prepared.reset()
        comm.Barrier()
        t4 = wtime()
        request = start()
        compute.run(request)
        request.Wait()
        t5 = wtime()
        wrong = wrong or prepared.check()
        if i >= warmup:
            k = i - warmup
            alone[k], work[k], both[k] = t1 - t0, t3 - t2, t5 - t4
    return both, alone, work, wrong


def _measure_plogp(comm: Any, s: BenchSettings, wtime: Callable[[], float],
                   reporter: eta.Reporter | None) -> Timings:
    if comm.Get_size() != 2:  # every rank sees the same size: they raise together
        raise UsageError(f"plogp measures messages between two ranks; run it on 2, not "
                         f"{comm.Get_size()}")
    total = s.warmup + s.repetitions
    between = None if reporter is None else (
        lambda done: reporter.after_round(done, total, len(s.sizes)))
    if reporter is not None:
        reporter.before_rounds(total, len(s.sizes))
    times, wrong = time_plogp(comm, s.sizes, s.repetitions, s.warmup, wtime, between)
    parts = dict(zip(PARTS, (times.send_overhead, times.recv_overhead, times.gap), strict=True))
    agree_on_error(comm, None if wrong is None else WrongResult(
        f"plogp on rank {comm.Get_rank()}: {wrong}"))
    seconds = times.half_round_trip
    attrs: dict[str, AttrValue] = {"plogp_timing": times.timing}
    if times.timing_note:
        attrs["plogp_timing_note"] = times.timing_note
    return Timings(seconds, parts=parts, attrs=attrs)


def _prepared(comm: Any, s: BenchSettings, nbytes: int) -> Prepared:
    error: KsptraceError | None = None
    try:
        prepared = prepare(s.operation, comm, nbytes)
    except MemoryError:
        error = UsageError(f"message size {nbytes} B does not fit in memory on rank "
                           f"{comm.Get_rank()}; lower --max-bytes")
    agree_on_error(comm, error)
    return _maybe_fault(prepared, comm.Get_rank())


def _time_size(comm: Any, s: BenchSettings, prepared: Prepared, compute: Compute | None,
               r: int, warmup: int, wtime: Callable[[], float]
               ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, str | None]:
    """One size's ``r`` kept repetitions after ``warmup``: times, comm and compute alone."""
    if compute is not None:
        return time_overlap(comm, prepared, compute, r, warmup, wtime)
    if s.mode == "back-to-back":
        seconds, wrong = kernel.time_back_to_back(comm, prepared, s.calls, r, warmup)
        return seconds, None, None, wrong
    seconds, wrong = time_calls(comm, prepared, r, warmup, wtime)
    return seconds, None, None, wrong


def probe(comm: Any, s: BenchSettings, compute: Compute | None, wtime: Callable[[], float]
          ) -> tuple[list[float], list[float], list[float]]:
    """Before the measurement: each size's buffers prepared and two repetitions run (checked,
    not kept); this rank's wall seconds of the preparation, the first repetition (cold, as the
    run's first warm-up call is) and the second (:func:`eta.sizes_plan`)."""
    times: list[list[float]] = [[], [], []]
    for nbytes in s.sizes:
        stamps = [wtime()]
        prepared = _prepared(comm, s, nbytes)
        stamps.append(wtime())
        wrong = _time_size(comm, s, prepared, compute, 1, 0, wtime)[3]
        stamps.append(wtime())
        wrong = _time_size(comm, s, prepared, compute, 1, 0, wtime)[3] or wrong
        stamps.append(wtime())
        del prepared
        for i in range(3):
            times[i].append(stamps[i + 1] - stamps[i])
        _agree_right(comm, s, nbytes, wrong)
    return times[0], times[1], times[2]


def _agree_right(comm: Any, s: BenchSettings, nbytes: int, wrong: str | None) -> None:
    agree_on_error(comm, None if wrong is None else WrongResult(
        f"{s.operation} ({s.forcing.name}) at {nbytes} B on rank {comm.Get_rank()}: {wrong}"))


def _measure(comm: Any, s: BenchSettings, wtime: Callable[[], float],
             reporter: eta.Reporter | None = None) -> Timings:
    if s.operation == "plogp":
        return _measure_plogp(comm, s, wtime, reporter)
    m, r = len(s.sizes), s.repetitions
    seconds = np.empty((m, r))
    overlap = s.operation == "iallreduce_overlap"
    comm_s, compute_s = (np.empty((m, r)), np.empty((m, r))) if overlap else (None, None)
    compute = calibrate(s.compute_seconds, s.test_calls + 1) if overlap else None
    if compute is not None:
        compute = Compute(comm.bcast(compute.units, root=0), compute.chunks)
    if comm.bcast(reporter is not None, root=0):  # rank 0 reports; every rank probes
        prep, cold, warm = probe(comm, s, compute, wtime)
        if reporter is not None:
            plan = eta.sizes_plan(prep, cold, warm, s.warmup + r)
            reporter.planned(plan, eta.sizes_line(plan, s.warmup + r,
                                                  sum(prep) + sum(cold) + sum(warm),
                                                  reporter.load))
            reporter.start()
    for j, nbytes in enumerate(s.sizes):
        prepared = _prepared(comm, s, nbytes)
        seconds[j], alone, work, wrong = _time_size(comm, s, prepared, compute, r, s.warmup,
                                                    wtime)
        if comm_s is not None and compute_s is not None:
            comm_s[j], compute_s[j] = alone, work
        del prepared  # before the next size's buffers: one size's at a time (buffer_bytes)
        _agree_right(comm, s, nbytes, wrong)
        if reporter is not None:  # between sizes, after the agreement (all ranks are past it)
            reporter.progress(j + 1)
    return Timings(seconds, comm_s, compute_s, compute.units if compute else 0)


def _maybe_fault(prepared: Prepared, rank: int) -> Prepared:
    fault = os.environ.get(FAULT_ENV)
    if fault == "raise-on-rank-1" and rank == 1:
        raise RuntimeError("injected fault on rank 1 (KSPTRACE_FAULT)")
    if fault == "wrong-result-on-rank-1" and rank == 1:
        return replace(prepared, check=lambda: "injected wrong result (KSPTRACE_FAULT)")
    return prepared


def _attributes(s: BenchSettings, layout: Any, nprocs: int, start_utc: str,
                compute_units: int, loadavg_before: float, thread: str
                ) -> dict[str, AttrValue | None]:
    import h5py
    import mpi4py
    from mpi4py import MPI

    launch = json.loads(os.environ.get(LAUNCH_ENV, "{}") or "{}")
    library_version = MPI.Get_library_version().strip()
    attrs: dict[str, AttrValue | None] = {
        "operation": s.operation, "algorithm": s.forcing.algorithm,
        "algorithm_name": s.forcing.name, "segment_bytes": s.forcing.segment_bytes,
        "algorithm_forced": s.forcing.forced,
        "algorithm_env": json.dumps({k: os.environ.get(k) for k, _ in s.forcing.env}),
        "algorithm_note": s.forcing.note, "mpi_flavor": s.forcing.library,
        "repetitions": s.repetitions, "warmup": s.warmup, "values_checked": True,
        "min_bytes": int(min(s.sizes)), "max_bytes": int(max(s.sizes)),
        "compute_seconds_target": s.compute_seconds, "test_calls": s.test_calls,
        "compute_units": compute_units, "timing_mode": s.mode,
        "calls_per_repetition": s.calls if s.mode == "back-to-back" else 1,
        "local_reduce_seconds_per_byte": local_reduce_seconds_per_byte()
        if s.operation in REDUCING else None,
        "nprocs": nprocs, "n_nodes": len(set(layout.node_ids)),
        "ranks_per_node": max(layout.node_ids.count(i) for i in set(layout.node_ids)),
        "cpu_count": os.cpu_count() or 0, "oversubscribed": layout.oversubscribed,
        "launcher": launch.get("launcher", "external" if nprocs > 1 else "none"),
        "launcher_flags": " ".join(launch.get("flags", [])),
        "start_utc": start_utc,
        "command_line": launch.get("command_line") or shlex.join(sys.argv),
        "argv": shlex.join(sys.argv),
        "mpi_library": library_version.splitlines()[0],
        "mpi_library_version": library_version[:4000],
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "mpi4py_version": mpi4py.__version__, "h5py_version": h5py.__version__,
        "numpy_version": np.__version__, "python_version": platform.python_version(),
        "ksptrace_version": __version__, "loadavg_before": loadavg_before,
        "loadavg_after": os.getloadavg()[0], "mpi_thread_level": thread,
        "wtick": float(MPI.Wtick()),
    }
    for env, key in PROVENANCE_ENV.items():
        if os.environ.get(env):
            attrs[key] = os.environ[env]
    return attrs


def execute(s: BenchSettings, comm: Any) -> Path:
    """Collective over ``comm``: measure and write the trace; returns its path on every rank."""
    from mpi4py import MPI

    lifeline.start_watchdog()
    start_utc = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    thread = thread_level()  # as MPI_Init gave it, before any MPI_T session (issue 66)
    held, refused = held_forcing(s.forcing)
    agree_on_error(comm, refused)
    layout = node_layout(comm)
    load = os.getloadavg()[0]  # before the measurement (issue 66: it was read after)
    reporter = eta.Reporter(sys.stderr, load) if comm.Get_rank() == 0 and not s.quiet else None
    timings = _measure(comm, s, MPI.Wtime, reporter)
    attrs = _attributes(s, layout, comm.Get_size(), start_utc, timings.compute_units, load,
                        thread)
    attrs.update(timings.attrs or {})
    attrs["algorithm_held"] = json.dumps(held) if held else None
    if probes_default(s, comm.Get_size()):
        ran, why_not = mpich_default.default_allreduce_ran(comm, s.sizes)
    else:
        ran, why_not = what_ran(s, comm.Get_size(), held, str(attrs["mpi_library"]),
                                int(attrs["n_nodes"] or 1))
    if ran is not None:
        attrs["algorithm_ran"] = json.dumps({str(k): v for k, v in ran.items()})
    phases = fallbacks.phases_per_size(s.forcing.library, s.operation, s.forcing.name, s.sizes,
                                       comm.Get_size(), s.forcing.segment_bytes)
    if phases is not None and s.forcing.forced and comm.Get_size() > 1:  # issue 66
        attrs["segment_phases"] = json.dumps({str(k): v for k, v in phases.items()})
    if why_not:
        attrs["algorithm_note"] = "; ".join(filter(None, (s.forcing.note, why_not)))
    if comm.Get_size() == 1 and s.forcing.forced:
        attrs["algorithm_note"] = ("P = 1: no algorithm applies (a one-rank collective is a "
                                   "local copy; Open MPI uses its self component)")
    rows = comm.gather((timings, layout.node_id, layout.hostname), root=0)
    error: KsptraceError | None = None
    if comm.Get_rank() == 0:
        try:
            _write(s, rows, attrs)
        except KsptraceError as exc:
            error = exc
    agree_on_error(comm, error)
    return s.out


def _write(s: BenchSettings, rows: list[tuple[Timings, int, str]],
           attrs: dict[str, AttrValue | None]) -> None:
    stack = np.stack
    overlap = rows[0][0].comm_seconds is not None
    trace = ctrace.CollectiveTrace(
        seconds=stack([t.seconds for t, _, _ in rows]),
        message_bytes=np.asarray(s.sizes, np.int64),
        node_ids=np.asarray([n for _, n, _ in rows], np.int64),
        hostnames=tuple(h for _, _, h in rows),
        attrs={k: v for k, v in attrs.items() if v is not None},
        comm_seconds=stack([_given(t.comm_seconds) for t, _, _ in rows]) if overlap else None,
        compute_seconds=stack([_given(t.compute_seconds) for t, _, _ in rows])
        if overlap else None,
        parts={name: stack([_given((t.parts or {}).get(name)) for t, _, _ in rows])
               for name in PARTS} if rows[0][0].parts is not None else None)
    try:
        lifeline.check_launcher_alive()
        ctrace.write(trace, s.out, s.overwrite)
    except OSError as exc:
        raise OutputError(publish.describe_write_error(exc, s.out, 0)) from None


def _given(a: np.ndarray | None) -> np.ndarray:
    if a is None:
        raise ValueError("ranks disagree on whether this is an overlap run")
    return a
