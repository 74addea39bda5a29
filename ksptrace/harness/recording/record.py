"""``ksptrace.record``: trace every KSPSolve of a block of any petsc4py program.

::

    with ksptrace.record(ksp, "traces/run.h5", comm=comm) as rec:
        for step in range(nsteps):
            ksp.solve(b, x)

The block attaches the stamping monitor of :mod:`ksptrace.harness.monitoring.monitor` (the same
allocation-free hot path as ``ksptrace run``) and a pre- and post-solve hook (``KSPSetPreSolve`` and
``KSPSetPostSolve``, through ctypes: petsc4py 3.18 wraps neither), in C beside the C monitor
(:mod:`ksptrace.harness.recording.solvehooks`), else in Python
(:mod:`ksptrace.harness.recording.pyhooks`). Every solve stamps into one growing buffer: the
pre-solve hook points the monitor at the free slots after the last solve, the post-solve hook reads
the solve's iteration count, its converged reason, its time (``MPI_Wtime`` in the two hooks) and its
reductions (PETSc's message counters, with no event log running:
:mod:`ksptrace.harness.monitoring.counters`) and moves the free slots on. Nothing is copied or reset
between solves, and whether every iteration was reported is checked once, on leaving the block, so
that a program of many small solves pays well under a microsecond per solve with the C hooks. Solves
run as the program asks: nothing is forced. On leaving the block the ranks write one trace of
several solves (schema 3) collectively and atomically, or, when an exception escaped on any rank,
nothing.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import os
import shlex
import sys
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from mpi4py import MPI
from petsc4py import PETSc

from ksptrace.errors import (
    ContaminatedTimings,
    KsptraceError,
    OutputError,
    SolverError,
    UsageError,
)
from ksptrace.harness.config.kspsetup import reason_name
from ksptrace.harness.config.provenance import versions
from ksptrace.harness.launching.mpienv import agree_on_error, cpu_list, node_layout
from ksptrace.harness.monitoring import counters, cpuload, eventlog, mpiwait, native
from ksptrace.harness.monitoring.monitor import StampMonitor, check_reported
from ksptrace.harness.monitoring.setuptime import setup_seconds
from ksptrace.harness.recording.pyhooks import PythonHooks
from ksptrace.harness.recording.recordargs import as_ksp, as_mpi, options_line, restart_of
from ksptrace.harness.recording.solvehooks import NativeHooks, Recorded
from ksptrace.trace import iteration_events, publish, write
from ksptrace.trace.model import AttrValue, Solves, Trace

SPARE = 2
"""Monitor slots beyond max_it: pipelined CG-type methods report one iteration more."""
_RECORDING: set[int] = set()
"""Handles of the KSPs inside a record block now (blocks on one KSP cannot nest)."""


class Recorder:
    """Records every KSPSolve of one KSP while the ``with`` block runs (see the module)."""

    def __init__(self, solver: Any, path: str | os.PathLike[str], comm: Any = None, *,
                 name: str | None = None, overwrite: bool = False,
                 attrs: dict[str, AttrValue] | None = None, events: bool = False) -> None:
        self.ksp = as_ksp(solver)
        self.events = events
        """Time PETSc's MatMult, PCApply and vector reductions per iteration too."""
        self.mpicomm = as_mpi(comm, self.ksp)
        self.path = Path(path)
        self.name = name or Path(sys.argv[0] or "python").stem or "python"
        self.overwrite = overwrite
        self.extra = dict(attrs or {})
        self.monitor = StampMonitor(1, MPI.Wtime)
        self._counter: mpiwait.WaitCounter | None = None
        self._hooks: NativeHooks | PythonHooks | None = None
        """The C hooks, where the C monitor stamps and PETSc counts, else the Python ones."""
        self._log: eventlog.SolveLog | None = None
        """How the solves are counted (trace attributes event_log, reductions_source)."""
        self._lib = ctypes.CDLL(PETSc.__file__)  # libpetsc's symbols, through its dependencies
        self._got: Recorded | None = None
        """What the hooks recorded, taken over after the block."""
        self._error: KsptraceError | None = None
        self._cancelled = False
        """PETSc no longer called the stamping monitor when the block ended."""
        self._attached = 0
        """The handle of the KSP the hooks are on (0: none)."""

    @property
    def solves(self) -> int:
        """The solves recorded so far."""
        if self._got is not None:
            return len(self._got.ends)
        return 0 if self._hooks is None else self._hooks.solves

    def __enter__(self) -> Recorder:
        if int(self.ksp.handle) in _RECORDING:
            raise UsageError("this KSP is already inside a ksptrace.record block; blocks on one "
                             "KSP cannot nest: end the outer block first, or record one block")
        error: KsptraceError | None = None
        if self.mpicomm.Get_rank() == 0:
            try:
                publish.check_destination(self.path, self.overwrite)
            except KsptraceError as exc:
                error = exc
        agree_on_error(self.mpicomm, error)
        self.start_utc = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.layout = node_layout(self.mpicomm)
        self.loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        # the KSPSolve event's times: only the events ksptrace reads, unless the program logs
        # already (its own log stays as it is) or asked for the full log (-log_view)
        own = PETSc.Log.isActive() and not eventlog.narrowed_here()
        self._log = eventlog.SolveLog(PETSc, needs_event=False, program_logs=own)
        self.monitor.attach(self.ksp)
        error = None
        counter = None
        try:  # every rank refuses alike (KSPTRACE_MPI_WAITS=on without the interposer)
            counter = mpiwait.counter(self.events)
        except KsptraceError as exc:
            error = exc
        agree_on_error(self.mpicomm, error)
        self._counter = counter if all(self.mpicomm.allgather(counter is not None)) else None
        if self.events and self._counter is not None:
            self._counter.reset_spans()  # only the block's solves
        self._hooks = self._native_hooks() or PythonHooks(self.ksp, self.monitor, self._log,
                                                          SPARE)
        self._hooks.attach(self._lib, ctypes.c_void_p(self.ksp.handle))
        self._attached = self._handle = int(self.ksp.handle)
        self._type = str(self.ksp.getType())
        """The KSP's handle and type when the block began (a KSP destroyed inside the block
        has neither after it)."""
        _RECORDING.add(self._attached)
        self.mpicomm.Barrier()
        self.load_start = cpuload.sample()
        return self

    def _native_hooks(self) -> NativeHooks | None:
        """The C hooks, when the C monitor stamps and PETSc has its counters."""
        context = self.monitor.native_context()
        found = native.native(self.monitor.wtime)
        if context is None or self._log is None or self._log.counters is None \
                or isinstance(found, str):
            return None
        return NativeHooks(context, self.monitor.beyond, self._log.counters, self._lib,
                           found.wtime, SPARE,
                           None if self._counter is None else self._counter.totals)

    def _take(self) -> Recorded:
        """Take over what the hooks recorded (after they are detached) and free them."""
        if self._got is None:
            assert self._hooks is not None
            alive = self.ksp.handle and int(self.ksp.handle) == self._handle
            self._got = self._hooks.results(self.ksp.getType() if alive else self._type)
            self._hooks.free()
            self._error = self._error or self._got.error
            if self._cancelled and isinstance(self._error, SolverError):
                self._error = self._cancel_error()  # what stopped the stamps, not the method
        return self._got

    def _cancel_error(self) -> SolverError:
        return SolverError(
            "the ksptrace monitor was taken off the KSP inside the ksptrace.record block "
            "(KSPMonitorCancel or ksp.cancelMonitor()), so a solve after it recorded no "
            f"iteration; no trace written to {self.path}: cancel monitors before the block, "
            "or after it")

    def _check_all(self) -> None:
        """Every iteration of every recorded solve was reported (SolverError, saying which
        solve and why, when not)."""
        stamps = self._take().stamps
        start = 0
        for number, end in enumerate(self._take().ends):
            if np.isnan(stamps[start:end]).any():
                try:
                    check_reported(stamps[start:end], 0, self.ksp.getType(), end - start - 1)
                except SolverError as exc:
                    raise SolverError(f"solve {number + 1}: {exc}") from None
            start = end

    def _detach(self) -> None:
        """Take the hooks and the monitor off the KSP; a KSP destroyed inside the block (its
        handle is gone) took them with it, and is a SolverError."""
        if not self._attached:
            return
        _RECORDING.discard(self._attached)
        attached, self._attached = self._attached, 0
        if int(self.ksp.handle or 0) != attached:  # PETSc freed it and our hooks with it
            self.monitor.forget()
            raise SolverError("the KSP was destroyed inside the ksptrace.record block; no trace "
                              f"written to {self.path}: destroy it after the block")
        self._cancelled = not self.monitor.in_petsc()
        handle = ctypes.c_void_p(attached)
        self._lib.KSPSetPreSolve(handle, None, None)
        self._lib.KSPSetPostSolve(handle, None, None)
        self.monitor.detach()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._detach()
        finally:
            self._take()
        failed = self.mpicomm.allreduce(exc_type is not None, op=MPI.LOR)
        if failed:  # nothing is written; the ranks that raised nothing say why they stop
            if exc_type is None:
                raise SolverError("another rank raised an exception inside the ksptrace.record "
                                  f"block; no trace written to {self.path}")
            return
        load_end = cpuload.sample()
        if self._error is None:
            try:
                self._check_all()
            except KsptraceError as exc:
                self._error = self._cancel_error() if self._cancelled else exc
        agree_on_error(self.mpicomm, self._error)
        if not self._take().ends:
            raise SolverError(f"no KSPSolve ran inside the ksptrace.record block; no trace "
                              f"written to {self.path}")
        self._write(load_end)

    def _write(self, load_end: cpuload.Sample) -> None:
        got = self._take()
        lengths = list(np.diff([0, *got.ends]).tolist())
        used = got.ends[-1]
        stamps, norms = got.stamps[:used], got.norms[:used]
        found = self.mpicomm.allgather(lengths)
        error: KsptraceError | None = None
        if any(f != found[0] for f in found):
            error = SolverError("the ranks recorded different solves (numbers of solves or of "
                                "iterations); record a KSP that all ranks of comm solve together")
        agree_on_error(self.mpicomm, error)
        samples = self.mpicomm.allgather((self.load_start, load_end))
        foreign = cpuload.foreign_load([s for s, _ in samples], [e for _, e in samples],
                                       list(self.layout.node_ids))
        waits = self._waits(got, lengths)
        if not all(self.mpicomm.allgather(waits is not None)):
            waits = None
        events = None if not self.events or self._counter is None else \
            iteration_events.per_iteration(stamps, self._counter.spans(),
                                           np.concatenate([[0], np.cumsum(lengths)]))
        rows = self.mpicomm.gather(
            (stamps, np.array(got.seconds), self.layout.hostname, waits, events), root=0)
        attrs = self._attrs(foreign)
        if self.mpicomm.Get_rank() == 0:
            assert rows is not None
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            seconds = np.stack([r[1] for r in rows])
            names = {code: reason_name(PETSc.KSP.ConvergedReason, code)
                     for code in set(got.reasons)}
            solves = Solves(offsets, seconds, tuple(names[c] for c in got.reasons),
                            np.array(got.its))
            timed = rows[0][3] is not None
            wait_seconds = np.stack([r[3][0] for r in rows]) if timed else None
            mpi_calls = np.stack([r[3][1] for r in rows]) if timed else None
            event_seconds = None if events is None else np.stack([r[4] for r in rows])
            attrs["wait_accounting"] = (mpiwait.ACCOUNTING if timed
                                        else f"none ({self._why_no_waits()})")
            try:
                trace = Trace(np.stack([r[0] for r in rows]), norms.copy(),
                              np.array(self.layout.node_ids), tuple(r[2] for r in rows),
                              seconds.sum(axis=1), attrs, solves=solves)
                attrs["solve_max"] = float(trace.solve_seconds.max())
                first = [setup_seconds(float(seconds[p, 0]), trace.stamps[p, :offsets[1]])
                         for p in range(trace.nprocs)]
                if None not in first:  # the first solve's set-up (PCSetUp runs inside it)
                    attrs["setup_max"] = max(float(x or 0.0) for x in first)
                write.write_trace(Trace(trace.stamps, trace.residual_norms, trace.node_ids,
                                     trace.hostnames, trace.solve_seconds, attrs,
                                     solves=solves, wait_seconds=wait_seconds,
                                     mpi_calls=mpi_calls, event_seconds=event_seconds),
                                 self.path, self.overwrite)
            except KsptraceError as exc:
                error = exc
            except OSError as exc:
                error = OutputError(publish.describe_write_error(exc, self.path, 0))
        agree_on_error(self.mpicomm, error)
        if self.mpicomm.Get_rank() == 0 and foreign is not None and foreign.loaded:
            # as ksptrace run warns; a program can filter ksptrace.errors.ContaminatedTimings
            warnings.warn(f"ksptrace.record: {foreign.warning()}", ContaminatedTimings,
                          stacklevel=3)

    def _waits(self, got: Recorded, lengths: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
        """This rank's wait and reductions per iteration of every solve (the gaps between
        solves left out, as in :attr:`Trace.iteration_seconds`), or None without them."""
        if got.marks is None:
            return None
        marks = got.marks[:got.ends[-1]]
        if np.isnan(marks).any():
            return None
        waits, calls = mpiwait.per_iteration(marks)
        gaps = np.cumsum(lengths)[:-1] - 1
        return np.delete(waits, gaps), np.delete(calls, gaps)

    def _why_no_waits(self) -> str:
        if self._counter is None:
            return mpiwait.why_none()
        return "the Python solve hooks ran (no C monitor), which do not copy them"

    def _attrs(self, foreign: cpuload.ForeignLoad | None) -> dict[str, AttrValue]:
        """The trace's attributes (collective: the operator's size and nonzeros)."""
        nprocs = self.mpicomm.Get_size()
        ids = list(self.layout.node_ids)
        op = self.ksp.getOperators()[0]
        pc = self.ksp.getPC()
        impls = set(self.mpicomm.allgather(self.monitor.impl))
        got = self._take()
        attrs: dict[str, AttrValue | None] = {
            "monitor": impls.pop() if len(impls) == 1 else "mixed",
            "monitor_compiler": native.compiler() if self.monitor.impl == "c" else None,
            "problem": self.name, "recorded": True, "n": int(op.getSize()[0]),
            "n_global": int(op.getSize()[0]), "ksp": self.ksp.getType(),
            "ksp_requested": self.ksp.getType(), "pc": pc.getType(), "noise": "none",
            "restart": restart_of(self.ksp), "warmup": False, "events": self.events,
            "event_functions": ",".join(self._counter.events) if self.events and self._counter
            else None,
            "petsc_options": options_line(), "problem_config": "{}",
            "solves": len(got.ends), "iterations_done": got.ends[-1] - len(got.ends),
            "petsc_iterations": int(sum(got.its)),
            "reductions_blocking": int(got.blocking), "reductions_split": int(got.split),
            "ksp_solves": len(got.ends),
            "event_log": None if self._log is None else self._log.event_log,
            "solve_time_source": eventlog.HOOK_TIME_SOURCE,
            "reductions_source": (counters.SOURCE if isinstance(self._hooks, NativeHooks)
                                  else None if self._log is None
                                  else self._log.reductions_source),
            "nprocs": nprocs, "n_nodes": len(set(ids)),
            "ranks_per_node": max(ids.count(i) for i in set(ids)),
            "cpu_count": os.cpu_count() or 0, "oversubscribed": self.layout.oversubscribed,
            "rank_cpus": " ".join(cpu_list(c) for c in self.layout.rank_cpus),
            "ranks_pinned": self.layout.pinned,
            "launcher": "external" if nprocs > 1 else "none", "launcher_flags": "",
            "hdf5_path": "gather", "start_utc": self.start_utc,
            "command_line": shlex.join(sys.argv), "argv": shlex.join(sys.argv),
            "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
            "loadavg_before": self.loadavg,
            "foreign_cpu_share": None if foreign is None else foreign.share,
            "foreign_cpu_seconds": None if foreign is None else foreign.seconds,
            "foreign_cpu_node": None if foreign is None else foreign.node,
        }
        nnz = None
        if op.getType() not in ("python", "shell"):
            nnz = op.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"]
        attrs["nnz"] = None if nnz is None else int(nnz)
        attrs.update(versions(PETSc))
        attrs.update(self.extra)
        return {k: v for k, v in attrs.items() if v is not None}


def record(solver: Any, path: str | os.PathLike[str], comm: Any = None, *,
           name: str | None = None, overwrite: bool = False,
           attrs: dict[str, AttrValue] | None = None, events: bool = False) -> Recorder:
    """Record every KSPSolve of ``solver`` (a KSP, or a SNES's or TS's KSP) inside a ``with``
    block into the trace ``path``; ``comm`` is required on more than one rank.

    ``name`` is the trace's ``problem`` attribute (default: the script's name); ``attrs`` are
    added to the trace's attributes (your own parameters: a grid size, a time step). With
    ``events`` each iteration's time in MatMult, PCApply and the vector reductions is recorded
    too (``event_seconds``, as ``ksptrace run --events``).
    """
    return Recorder(solver, path, comm, name=name, overwrite=overwrite, attrs=attrs,
                    events=events)
