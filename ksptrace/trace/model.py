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

SCHEMA_VERSION = 2
"""Bumped whenever a reader of the old version could not read a new file correctly.

Version 1 kept every attribute on the file's root; version 2 keeps only ``schema_version``
there and the rest in the groups of :data:`ATTRIBUTE_GROUPS`. Readers read both."""

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
)
"""Attributes that define a configuration: traces that agree on all of them may be pooled."""
FOREIGN_LOAD_LIMIT = 0.10
"""A solve during which other processes used more than this share of a node's CPU capacity
(trace attribute ``foreign_cpu_share``) is reported and flagged as contaminated."""
CONFIG_DEFAULTS: Mapping[str, AttrValue] = {"noise": "none"}
"""What a missing configuration attribute means (traces written before it existed)."""


ATTRIBUTE_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "run": (
        "problem", "n", "n_global", "nnz", "ksp", "ksp_requested", "pc", "iterations", "restart",
        "warmup", "noise", "petsc_options", "petsc_options_unused", "allow_unused_options",
        "problem_config",
    ),
    "result": (
        "iterations_done", "petsc_iterations", "monitor_calls", "converged_reason", "solve_max",
        "solve_min", "solve_mean", "solution_error", "snes_reason", "ksp_reason",
        "snes_iterations", "snes_norm0", "snes_norm1",
    ),
    "contamination": (
        "foreign_cpu_share", "foreign_cpu_seconds", "foreign_cpu_node", "loadavg_before",
    ),
    "layout": (
        "nprocs", "n_nodes", "ranks_per_node", "cpu_count", "oversubscribed", "launcher",
        "launcher_flags", "hdf5_path",
    ),
    "provenance": (
        "start_utc", "command_line", "argv", "petsc_version", "petsc4py_version",
        "mpi4py_version", "mpi_library", "mpi_standard", "h5py_version", "numpy_version",
        "python_version", "ksptrace_version", "openblas_num_threads", "omp_num_threads",
        "generator", "campaign", "campaign_hash", "run_id", "slurm_job_id", "slurm_array_job_id",
        "slurm_array_task_id", "slurm_job_name", "pbs_jobid", "pbs_array_index", "pbs_array_id",
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

    def __post_init__(self) -> None:
        stamps = np.asarray(self.stamps, dtype=np.float64)
        if stamps.ndim != 2 or stamps.shape[0] < 1 or stamps.shape[1] < 2:
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

    @property
    def nprocs(self) -> int:
        """P, the number of ranks."""
        return int(self.stamps.shape[0])

    @property
    def iterations(self) -> int:
        """K, the number of recorded iterations (monitor calls after the first)."""
        return int(self.stamps.shape[1] - 1)

    @cached_property
    def iteration_seconds(self) -> np.ndarray:
        """float64 [P, K]: ``T_p^k``, the duration of each iteration on each rank."""
        t = np.diff(self.stamps, axis=1)
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
        return (
            f"{self.attrs.get('problem', '?')} {self.attrs.get('ksp', '?')} "
            f"P={self.nprocs} n={self.attrs.get('n', '?')}"
        )

    def timing_fault(self) -> str | None:
        """Why the timings cannot be analysed, or None.

        Implausible, and so refused: NaN or inf anywhere in the stamps or KSPSolve times; an
        iteration that does not take positive time (stamps not strictly increasing); an
        iteration shorter than :data:`MIN_ITERATION_SECONDS` (1 ns, MPI_Wtime's resolution:
        no Krylov iteration, which does at least a matrix-vector product, is that fast) or
        longer than :data:`MAX_ITERATION_SECONDS`; a negative KSPSolve time.
        """
        if not np.isfinite(self.stamps).all() or not np.isfinite(self.solve_seconds).all():
            return "timings contain NaN or inf"
        t = self.iteration_seconds
        if (t <= 0).any():
            p, k = np.argwhere(t <= 0)[0]
            return (
                f"stamps not increasing (rank {p}, iteration {k + 1} takes {t[p, k]:.3g} s): "
                "the clock went backwards or the trace is corrupt"
            )
        if (t < MIN_ITERATION_SECONDS).any():
            return (
                f"iteration times below 1 ns (the shortest is {t.min():.3g} s), shorter than any "
                "solver iteration can take"
            )
        if (t > MAX_ITERATION_SECONDS).any():
            return f"an iteration time of {t.max():.3g} s, longer than {MAX_ITERATION_SECONDS:g} s"
        if (self.solve_seconds < 0).any():
            return "negative KSPSolve times"
        return None

    def config_key(self) -> tuple[tuple[str, AttrValue | None], ...]:
        """The configuration this run belongs to; runs with equal keys are repetitions."""
        return tuple((k, self.attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in CONFIG_KEYS)
