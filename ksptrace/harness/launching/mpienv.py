"""MPI facts about the running job: launcher detection, node layout, failing together."""

from __future__ import annotations

import os
import socket
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ksptrace.errors import KsptraceError

AGREED = "ksptrace_agreed"
"""Attribute set on an error that every rank raised together (see :func:`agree_on_error`)."""

LAUNCHER_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS")
"""Variables that show this process was started by mpiexec (OpenMPI, MPICH/Hydra, PMIx)."""


RUNTIME_PREFIXES = ("PMIX_", "OMPI_MCA_orte_", "OMPI_COMM_WORLD_")
RUNTIME_KEYS = frozenset({"OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_APP_CTX_NUM_PROCS",
                          "ORTE_SCHIZO_DETECTION", "OMPI_UNIVERSE_SIZE"})
"""What an MPI runtime sets for the processes it starts (its PMIx identity, its launcher)."""


def without_mpi_runtime(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: ``os.environ``) for a new MPI job: no runtime identity.

    A process that initialised MPI on its own (a singleton: a notebook, or a test suite, that
    imported mpi4py) carries its runtime's PMIx namespace and Open MPI's launch variables in its
    C environment, which a child started without an explicit ``env`` inherits and ``sbatch``
    then exports into the job. Two jobs with the same inherited identity on one node take the
    same Open MPI job id, hence the same shared-memory segment names, and crash each other in
    vader (seen: two array tasks of a Slurm campaign, both SIGSEGV in MPI_Allgather). The
    user's own settings (``OMPI_MCA_btl``, ``OMPI_MCA_coll_tuned_*``, ...) are kept.
    """
    source = os.environ if env is None else env
    return {k: v for k, v in source.items()
            if k not in RUNTIME_KEYS and not k.startswith(RUNTIME_PREFIXES)}


def under_mpi_launcher(env: dict[str, str] | None = None) -> bool:
    e = os.environ if env is None else env
    if any(k in e for k in LAUNCHER_ENV):
        return True
    # srun sets SLURM_PROCID for each task (but not in the batch script itself).
    return "SLURM_PROCID" in e and "SLURM_STEP_ID" in e


def launched_size(env: dict[str, str] | None = None) -> int | None:
    e = os.environ if env is None else env
    for key in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"):
        if key in e:
            try:
                return int(e[key])
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class NodeLayout:
    node_id: int
    """0-based id of this rank's node, in order of the node's lowest rank."""
    hostname: str
    ranks_on_node: int
    node_ids: tuple[int, ...]
    """Every rank's node id (the same on all ranks)."""
    oversubscribed: bool
    """True when some node runs more ranks than it has CPUs."""
    node_cpus: tuple[int, ...] = ()
    """The CPUs this rank's node gives the job: the union of its ranks' affinity masks (all
    of the machine's CPUs unless a cpuset or a binding narrows them)."""
    rank_cpus: tuple[tuple[int, ...], ...] = ()
    """Every rank's affinity mask (the CPUs it may run on), in rank order."""

    @property
    def pinned(self) -> bool:
        """Every rank bound to one CPU of its own (on its node): no two ranks share a core and
        none migrates. Open MPI binds to cores by default up to 2 ranks, not when
        oversubscribed."""
        if not self.rank_cpus or any(len(c) != 1 for c in self.rank_cpus):
            return False
        seen = {(node, c[0]) for node, c in zip(self.node_ids, self.rank_cpus, strict=True)}
        return len(seen) == len(self.rank_cpus)


def cpu_list(cpus: tuple[int, ...]) -> str:
    """CPUs as ranges, as taskset prints them: (0, 1, 2, 5) -> "0-2,5"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def allowed_cpus() -> set[int]:
    """CPUs this process may run on (all CPUs where affinity cannot be read)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def node_layout(mpicomm: Any) -> NodeLayout:
    """Group ranks by shared-memory domain (one per node) and give each node an id."""
    from mpi4py import MPI

    shm = mpicomm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        leader = shm.bcast(mpicomm.Get_rank(), root=0)
        ranks_on_node = shm.Get_size()
        node_cpus = tuple(sorted(set().union(*shm.allgather(sorted(allowed_cpus())))))
    finally:
        shm.Free()
    leaders = mpicomm.allgather(leader)
    order = {lead: i for i, lead in enumerate(sorted(set(leaders)))}
    node_ids = tuple(order[lead] for lead in leaders)
    over_here = ranks_on_node > max(1, len(node_cpus))
    oversubscribed = bool(mpicomm.allreduce(over_here, op=MPI.LOR))
    hostname = MPI.Get_processor_name() or socket.gethostname()
    rank = mpicomm.Get_rank()
    rank_cpus = tuple(tuple(c) for c in mpicomm.allgather(sorted(allowed_cpus())))
    return NodeLayout(node_ids[rank], hostname, ranks_on_node, node_ids, oversubscribed,
                      node_cpus, rank_cpus)


def agree_on_error(mpicomm: Any, error: KsptraceError | None) -> None:
    """Collective: if any rank has an error, every rank raises the first one (no hang, no abort).

    Use only around code without communication, so that every rank reaches this call. Inside
    :func:`fail_together` only rank 0 reports such an error; the others exit with its code.
    """
    errors = mpicomm.allgather(None if error is None else (type(error), str(error)))
    for item in errors:
        if item is not None:
            cls, message = item
            agreed = cls(message)
            setattr(agreed, AGREED, True)
            raise agreed


@contextmanager
def fail_together(mpicomm: Any) -> Iterator[None]:
    """An exception on one rank aborts the whole job instead of leaving the others hanging.

    An error all ranks agreed on needs no abort: rank 0 raises it (the CLI prints one line) and
    the other ranks exit quietly with its exit code.
    """
    try:
        yield
    except KsptraceError as exc:
        if mpicomm.Get_size() == 1:
            raise
        rank = mpicomm.Get_rank()
        if getattr(exc, AGREED, False):
            if rank == 0:
                raise
            raise SystemExit(exc.exit_code) from None
        print(f"ksptrace: error: {exc} [rank {rank}]", file=sys.stderr, flush=True)
        mpicomm.Abort(exc.exit_code)
    except BaseException as exc:
        if mpicomm.Get_size() == 1 or isinstance(exc, SystemExit):
            raise
        rank = mpicomm.Get_rank()
        detail = traceback.format_exc(limit=-3) if os.environ.get("KSPTRACE_DEBUG") else ""
        print(
            f"ksptrace: error: internal error on rank {rank}: {type(exc).__name__}: {exc}; "
            f"set KSPTRACE_DEBUG=1 for a traceback{detail and chr(10) + detail}",
            file=sys.stderr,
            flush=True,
        )
        mpicomm.Abort(1)
