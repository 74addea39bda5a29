"""The trace data model: one run's raw per-rank, per-iteration time stamps and its metadata.

This module is pure: numpy arrays in, numpy arrays out. It imports neither h5py, petsc4py nor
mpi4py, so that analysis code can depend on it on a machine without PETSc or MPI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

import numpy as np

from ksptrace.errors import TraceError
from ksptrace.trace import iteration_events

SCHEMA_VERSION = 3
"""The newest schema this ksptrace reads; bumped whenever a reader of the old version could not
read a new file correctly.

Version 1 kept every attribute on the file's root; version 2 keeps only ``schema_version``
there and the rest in the groups of :data:`ATTRIBUTE_GROUPS`; version 3 adds the group
``solves`` of a trace that holds several KSPSolves back to back (:class:`Solves`). Readers read
all three. A trace of one solve is still written as version 2, which older readers read."""
ONE_SOLVE_SCHEMA = 2
"""The schema a trace of one solve is written in (it needs nothing of version 3)."""

AttrValue = str | int | float | bool

MIN_ITERATION_SECONDS = 1e-9
"""Shorter iterations are implausible: 1 ns is MPI_Wtime's resolution on Linux."""
MAX_ITERATION_SECONDS = 1e6
"""Longer iterations (about 11.6 days) are implausible."""

CONFIG_KEYS: tuple[str, ...] = (
    "problem",
    "n",
    "ksp",
    "pc",
    "nprocs",
    "iterations",
    "restart",
    "ranks_per_node",
    "problem_config",
    "noise",
    "solve",
)
"""Attributes that define a configuration: traces that agree on all of them may be pooled.

``solve`` is the index of one solve of a trace of several (:func:`ksptrace.trace.solves.split`),
so that each solve is a configuration of its own unless solves of equal length are pooled."""
FOREIGN_LOAD_LIMIT = 0.10
"""A solve during which other processes used more than this share of a node's CPU capacity
(trace attribute ``foreign_cpu_share``) is reported and flagged as contaminated."""
CONFIG_DEFAULTS: Mapping[str, AttrValue] = {"noise": "none"}
"""What a missing configuration attribute means (traces written before it existed)."""


ATTRIBUTE_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "run": (
        "problem", "n", "n_global", "nnz", "ksp", "ksp_requested", "pc", "iterations", "restart",
        "warmup", "noise", "petsc_options", "petsc_options_unused", "allow_unused_options",
        "problem_config", "recorded", "monitor", "monitor_compiler", "event_log",
        "solve_time_source", "reductions_source", "events",
    ),
    "result": (
        "iterations_done", "petsc_iterations", "monitor_calls", "converged_reason", "solve_max",
        "solve_min", "solve_mean", "solution_error", "snes_reason", "ksp_reason",
        "snes_iterations", "snes_norm0", "snes_norm1", "solves", "solve",
        "reductions_blocking", "reductions_split", "ksp_solves", "solve_event_max",
        "setup_max",
    ),
    "contamination": (
        "foreign_cpu_share", "foreign_cpu_seconds", "foreign_cpu_node", "loadavg_before",
        "loadavg_after",
    ),
    "layout": (
        "nprocs", "n_nodes", "ranks_per_node", "cpu_count", "oversubscribed", "rank_cpus",
        "ranks_pinned", "launcher", "launcher_flags", "hdf5_path",
    ),
    "provenance": (
        "start_utc", "command_line", "argv", "petsc_version", "petsc4py_version",
        "petsc_dir", "petsc_arch", "petsc_library", "petsc_int_bytes", "petsc_real_bytes",
        "petsc_scalar", "petsc_debugging",
        "mpi4py_version", "mpi_library", "mpi_standard", "mpi_thread_level", "h5py_version",
        "numpy_version",
        "python_version", "ksptrace_version", "openblas_num_threads", "omp_num_threads",
        "generator", "campaign", "campaign_hash", "run_id", "repetition", "slurm_job_id",
        "slurm_array_job_id", "slurm_array_task_id", "slurm_job_name", "pbs_jobid",
        "pbs_array_index", "pbs_array_id",
    ),
})
"""The HDF5 groups a schema-2 trace keeps its attributes in, and the attributes each holds.

An attribute not listed (a problem's own flags, a generator's parameters, anything added
later) belongs to the run: :data:`DEFAULT_ATTRIBUTE_GROUP`."""
DEFAULT_ATTRIBUTE_GROUP = "run"
_GROUP_OF: Mapping[str, str] = {
    name: group for group, names in ATTRIBUTE_GROUPS.items() for name in names
}


def attribute_group(name: str) -> str:
    """The group of a schema-2 trace file that holds the attribute ``name``."""
    return _GROUP_OF.get(name, DEFAULT_ATTRIBUTE_GROUP)


def _readonly(a: np.ndarray) -> np.ndarray:
    """``a`` as an array nobody can change: a read-only copy, unless it already is one.

    An array is kept as it is when neither it nor any array it views is writable and its memory
    is a read-only buffer (what :func:`ksptrace.trace.io.read_trace` hands over): copying a
    41 M-value trace would double the memory it costs.
    """
    if _immutable(a):
        return a
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _immutable(a: object) -> bool:
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return isinstance(a, bytes) or (isinstance(a, memoryview) and a.readonly)


@dataclass(frozen=True)
class Solves:
    """Several KSPSolves recorded back to back in one trace (``ksptrace.record``).

    The stamps of solve ``s`` are columns ``offsets[s]:offsets[s+1]`` of :attr:`Trace.stamps`
    (and of its residual norms): its monitor calls 0..K_s, so solves of any length share one
    array without padding.
    """

    offsets: np.ndarray
    """int64 [S+1]: 0, then the end of each solve's stamps; the last is the number of stamps."""
    seconds: np.ndarray
    """float64 [P, S]: each solve's KSPSolve time on each rank, from PETSc's event log."""
    reasons: tuple[str, ...]
    """[S]: each solve's KSPConvergedReason, by name (``CONVERGED_RTOL``, ``DIVERGED_ITS``)."""
    petsc_iterations: np.ndarray
    """int64 [S]: the iteration count PETSc reported after each solve."""

    def __post_init__(self) -> None:
        offsets = np.asarray(self.offsets, dtype=np.int64)
        seconds = np.asarray(self.seconds, dtype=np.float64)
        its = np.asarray(self.petsc_iterations, dtype=np.int64)
        if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0:
            raise TraceError(f"solve offsets {offsets[:4]} must start at 0 and end each solve")
        if (np.diff(offsets) < 1).any():
            raise TraceError("solve offsets must increase: every solve has its monitor call 0")
        count = offsets.size - 1
        if seconds.ndim != 2 or seconds.shape[1] != count:
            raise TraceError(f"solve seconds have shape {seconds.shape}, expected [P, {count}]")
        if len(self.reasons) != count or its.shape != (count,):
            raise TraceError(f"{len(self.reasons)} converged reasons and {its.size} iteration "
                             f"counts for {count} solves")
        object.__setattr__(self, "offsets", _readonly(offsets))
        object.__setattr__(self, "seconds", _readonly(seconds))
        object.__setattr__(self, "petsc_iterations", _readonly(its))
        object.__setattr__(self, "reasons", tuple(str(r) for r in self.reasons))

    @property
    def count(self) -> int:
        """S, the number of solves."""
        return int(self.offsets.size - 1)

    @property
    def iterations(self) -> np.ndarray:
        """int64 [S]: K_s, the iterations each solve reported to the monitor after call 0."""
        return np.diff(self.offsets) - 1


@dataclass(frozen=True)
class Trace:
    """One run of one Krylov solve, as recorded on every rank.

    ``stamps[p, j]`` is ``MPI.Wtime()`` on rank ``p`` at the ``j``-th call of the KSP monitor
    (``j = 0`` is the call before the first iteration), so the time of iteration ``k`` on rank
    ``p`` is ``stamps[p, k] - stamps[p, k-1]``: the paper's ``T_p^k``.
    """

    stamps: np.ndarray
    """float64 [P, K+1], seconds, each rank's own clock."""
    residual_norms: np.ndarray
    """float64 [K+1], the norm the KSP monitor received (rank 0's copy; all ranks agree)."""
    node_ids: np.ndarray
    """int64 [P], 0-based id of the node (shared-memory domain) each rank ran on."""
    hostnames: tuple[str, ...]
    """[P], the host name of each rank."""
    solve_seconds: np.ndarray
    """float64 [P], the KSPSolve time of each rank from PETSc's event log."""
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)
    """Run parameters and provenance, as stored in the file's attributes."""
    path: str | None = None
    """The file the trace was read from, if any."""
    injected_seconds: np.ndarray | None = None
    """float64 [P, K], the detours a noise model injected into each iteration on each rank
    (busy-waits, seconds), or None for a run without injected noise (and every older trace)."""
    wait_seconds: np.ndarray | None = None
    """float64 [P, K], the time each rank spent inside the solve's MPI reductions during each
    iteration (the blocking reduction, or the completion of a non-blocking one), or None for a
    trace recorded without wait accounting (and every older trace)."""
    mpi_calls: np.ndarray | None = None
    """int64 [P, K], the MPI reductions each rank started during each iteration (with
    :attr:`wait_seconds`)."""
    event_seconds: np.ndarray | None = None
    """float64 [P, K, E], each rank's time in MatMult, PCApply and the vector reductions per
    iteration (:mod:`ksptrace.trace.iteration_events`), or None (a run without ``--events``)."""
    solves: Solves | None = None
    """Several solves back to back (schema 3), or None for a trace of one solve. With solves,
    ``stamps`` and ``residual_norms`` hold every solve's monitor calls one after the other,
    ``solve_seconds`` each rank's total, and :attr:`iteration_seconds` every solve's
    iterations (never the gap between two solves)."""
    source: tuple[int, ...] | None = None
    """The file read, as :func:`ksptrace.trace.probe.source_of` names it, through the one
    descriptor the whole read used, unchanged from its open to the end of the read; None for a
    trace not read from a file or changed while read."""

    def __post_init__(self) -> None:
        stamps = np.asarray(self.stamps, dtype=np.float64)
        if stamps.ndim == 2 and self.solves is not None:
            self._check_solves(stamps)
        elif stamps.ndim != 2 or stamps.shape[0] < 1 or stamps.shape[1] < 2:
            raise TraceError(
                f"stamps must have shape [P >= 1, K+1 >= 2], got {stamps.shape}; "
                "the run recorded no iteration"
            )
        nprocs, nstamps = stamps.shape
        residuals = np.asarray(self.residual_norms, dtype=np.float64)
        node_ids = np.asarray(self.node_ids, dtype=np.int64)
        solve = np.asarray(self.solve_seconds, dtype=np.float64)
        if residuals.shape != (nstamps,):
            raise TraceError(f"residual_norms has shape {residuals.shape}, expected ({nstamps},)")
        if node_ids.shape != (nprocs,):
            raise TraceError(f"node_ids has shape {node_ids.shape}, expected ({nprocs},)")
        if solve.shape != (nprocs,):
            raise TraceError(f"solve_seconds has shape {solve.shape}, expected ({nprocs},)")
        if node_ids.size and (node_ids.min() < 0 or node_ids.max() >= nprocs):
            raise TraceError(
                f"node_ids range from {node_ids.min()} to {node_ids.max()}; they must be 0-based "
                f"node indices below P = {nprocs}"
            )
        if len(self.hostnames) != nprocs:
            raise TraceError(f"{len(self.hostnames)} hostnames for {nprocs} ranks")
        object.__setattr__(self, "stamps", _readonly(stamps))
        object.__setattr__(self, "residual_norms", _readonly(residuals))
        object.__setattr__(self, "node_ids", _readonly(node_ids))
        object.__setattr__(self, "solve_seconds", _readonly(solve))
        object.__setattr__(self, "hostnames", tuple(str(h) for h in self.hostnames))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))
        if self.injected_seconds is not None:
            injected = np.asarray(self.injected_seconds, dtype=np.float64)
            if injected.shape != (nprocs, nstamps - 1):
                raise TraceError(f"injected_seconds has shape {injected.shape}, expected "
                                 f"({nprocs}, {nstamps - 1})")
            if not np.all(np.isfinite(injected)) or (injected.size and injected.min() < 0):
                raise TraceError("injected_seconds holds negative or non-finite detours")
            object.__setattr__(self, "injected_seconds", _readonly(injected))
        self._check_waits(nprocs, nstamps)
        if self.event_seconds is not None:
            events = iteration_events.check(self.event_seconds, (nprocs, self.iterations))
            object.__setattr__(self, "event_seconds", _readonly(events))

    def _check_waits(self, nprocs: int, nstamps: int) -> None:
        if (self.wait_seconds is None) != (self.mpi_calls is None):
            raise TraceError("wait_seconds and mpi_calls come together; one of them is missing")
        if self.wait_seconds is None or self.mpi_calls is None:
            return
        count = 1 if self.solves is None else self.solves.count
        expected = (nprocs, nstamps - count)
        waits = np.asarray(self.wait_seconds, dtype=np.float64)
        calls = np.asarray(self.mpi_calls)
        if waits.shape != expected or calls.shape != expected:
            raise TraceError(f"wait_seconds has shape {waits.shape} and mpi_calls {calls.shape}, "
                             f"expected {expected}")
        if calls.dtype.kind not in "iu":
            raise TraceError(f"mpi_calls has dtype {calls.dtype}; a trace stores integers")
        if not np.all(np.isfinite(waits)) or (waits.size and waits.min() < 0):
            raise TraceError("wait_seconds holds negative or non-finite times")
        if calls.size and calls.min() < 0:
            raise TraceError("mpi_calls holds negative counts")
        object.__setattr__(self, "wait_seconds", _readonly(waits))
        object.__setattr__(self, "mpi_calls", _readonly(calls.astype(np.int64, copy=False)))

    def _check_solves(self, stamps: np.ndarray) -> None:
        solves = self.solves
        assert solves is not None
        if stamps.shape[0] < 1 or solves.offsets[-1] != stamps.shape[1]:
            raise TraceError(f"the solves end at stamp {solves.offsets[-1]} but stamps have shape "
                             f"{stamps.shape}")
        if solves.seconds.shape[0] != stamps.shape[0]:
            raise TraceError(f"solve seconds for {solves.seconds.shape[0]} ranks, stamps for "
                             f"{stamps.shape[0]}")
        if solves.iterations.max() < 1:
            raise TraceError("no solve recorded an iteration")
        if self.injected_seconds is not None:
            raise TraceError("a trace of several solves holds no injected noise")

    @property
    def nprocs(self) -> int:
        """P, the number of ranks."""
        return int(self.stamps.shape[0])

    @property
    def iterations(self) -> int:
        """K, the number of recorded iterations (monitor calls after the first of each solve)."""
        count = 1 if self.solves is None else self.solves.count
        return int(self.stamps.shape[1] - count)

    @cached_property
    def iteration_seconds(self) -> np.ndarray:
        """float64 [P, K]: ``T_p^k``, the duration of each iteration on each rank."""
        with np.errstate(invalid="ignore", over="ignore"):  # inf stamps: timing_fault says so
            t = np.diff(self.stamps, axis=1)
        if self.solves is not None:  # drop the gaps between one solve's end and the next start
            t = np.delete(t, self.solves.offsets[1:-1] - 1, axis=1)
        t.setflags(write=False)
        return t

    @property
    def n_nodes(self) -> int:
        return int(np.unique(self.node_ids).size)

    @property
    def ranks_per_node(self) -> int:
        """The largest number of ranks sharing one node (the paper's P / P-hat)."""
        return int(np.bincount(self.node_ids).max())

    @property
    def solve_max(self) -> float:
        """The measured KSPSolve time: the slowest rank's, as PETSc's -log_view reports it."""
        return float(self.solve_seconds.max())

    def attr(self, name: str, default: AttrValue | None = None) -> AttrValue | None:
        return self.attrs.get(name, default)

    @property
    def label(self) -> str:
        """A short human name: problem, solver, P and n."""
        solve = self.attrs.get("solve")
        return (
            f"{self.attrs.get('problem', '?')} {self.attrs.get('ksp', '?')} "
            f"P={self.nprocs} n={self.attrs.get('n', '?')}"
            + ("" if solve is None else f" solve {solve}")
        )

    def timing_fault(self) -> str | None:
        """Why the timings cannot be analysed, or None.

        Implausible, and so refused: NaN or inf anywhere in the stamps or KSPSolve times; an
        iteration that does not take positive time (stamps not strictly increasing); an
        iteration shorter than :data:`MIN_ITERATION_SECONDS` (1 ns, MPI_Wtime's resolution:
        no Krylov iteration, which does at least a matrix-vector product, is that fast) or
        longer than :data:`MAX_ITERATION_SECONDS`; a negative KSPSolve time.

        The reader asks, and so does the analysis: the arrays are read-only, so the verdict is
        worked out once (0.4 s at paper scale).
        """
        return self._timing_verdict

    @cached_property
    def _timing_verdict(self) -> str | None:
        if not np.isfinite(self.stamps).all() or not np.isfinite(self.solve_seconds).all():
            return "timings contain NaN or inf"
        t = self.iteration_seconds
        if t.size == 0:
            return None if (self.solve_seconds >= 0).all() else "negative KSPSolve times"
        shortest, longest = t.min(), t.max()  # two passes, no temporary as large as the trace
        if shortest <= 0:
            p, k = np.argwhere(t <= 0)[0]
            return (
                f"stamps not increasing (rank {p}, iteration {k + 1} takes {t[p, k]:.3g} s): "
                "the clock went backwards or the trace is corrupt"
            )
        # a time is a difference of two stamps, exact to their spacing: 1 ns computed from
        # stamps near 0.1 s may come out 0.99999997 ns (the rows increase: ends hold the max)
        slack = 2 * float(np.spacing(np.abs(self.stamps[:, [0, -1]]).max()))
        if shortest < MIN_ITERATION_SECONDS - slack:
            shown = next(text for digits in range(3, 18)
                         if float(text := f"{shortest:.{digits}g}") < MIN_ITERATION_SECONDS)
            return (
                f"iteration times below 1 ns (the shortest is {shown} s), shorter than "
                "any solver iteration can take"
            )
        if longest > MAX_ITERATION_SECONDS:
            return f"an iteration time of {longest:.3g} s, longer than {MAX_ITERATION_SECONDS:g} s"
        if (self.solve_seconds < 0).any():
            return "negative KSPSolve times"
        return None

    def config_key(self) -> tuple[tuple[str, AttrValue | None], ...]:
        """The configuration this run belongs to; runs with equal keys are repetitions."""
        return tuple((k, self.attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in CONFIG_KEYS)
