"""Writing one run's trace from all ranks: in parallel through MPI-IO, or gathered to rank 0.

Either way the file appears under its final name only when complete (temporary name, then an
atomic rename on rank 0), so a killed run never leaves a half-written trace.

A write that fails (a full disk above all) fails on every rank together, with one OutputError,
and leaves no temporary file. For MPI-IO this needs care: an I/O error inside HDF5's collective
flush or close sends the ranks down different paths (rank 0 into a barrier, the others into a
broadcast) and the job spins forever. So HDF5 never meets a full disk here: rank 0 builds the
whole file in memory (every attribute, every dataset allocated), checks that its exact size fits
and writes it with plain OS calls; the ranks agree on that outcome; only then do they open it
through MPI-IO and fill in their rows, which needs neither new space nor a metadata change.
The gather path writes the same way, so both fail with the same line.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ksptrace.errors import KsptraceError, OutputError, UsageError
from ksptrace.harness.launching import lifeline
from ksptrace.harness.launching.mpienv import agree_on_error
from ksptrace.trace import layout, publish, temporaries, write
from ksptrace.trace.model import AttrValue, Trace

FAULT_ENV = "KSPTRACE_FAULT"
"""Fault injection for tests: 'kill-during-write' makes rank 0 SIGKILL itself mid-write;
'write-error-on-rank-1' makes rank 1's MPI-IO row write fail as a full disk would."""


@dataclass(frozen=True)
class LocalRecord:
    """What one rank contributes to the trace."""

    stamps: np.ndarray
    residual_norms: np.ndarray
    node_id: int
    hostname: str
    solve_seconds: float
    injected: np.ndarray | None = None
    """The detours injected into each iteration (seconds), or None without noise."""
    wait_seconds: np.ndarray | None = None
    """Each iteration's time in MPI reductions (seconds), or None without wait accounting."""
    mpi_calls: np.ndarray | None = None
    """Each iteration's MPI reductions started (with :attr:`wait_seconds`)."""
    event_seconds: np.ndarray | None = None
    """[K, E]: each iteration's time in PETSc's events (``--events``), or None."""


def h5py_has_mpi() -> bool:
    return bool(h5py.get_config().mpi)


def choose_mode(requested: str, nprocs: int) -> str:
    if requested == "mpio" and not h5py_has_mpi():
        raise UsageError(
            "--hdf5-path mpio needs h5py built with MPI (Debian: python3-h5py-mpi, run under "
            "mpiexec); use --hdf5-path gather or auto"
        )
    if requested == "auto":
        return "mpio" if nprocs > 1 and h5py_has_mpi() else "gather"
    return requested


def _maybe_fault(rank: int) -> None:
    fault = os.environ.get(FAULT_ENV)
    if fault == "kill-during-write" and rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "write-error-on-rank-1" and rank == 1:
        raise OSError(28, "No space left on device (injected by KSPTRACE_FAULT)")


def _agree(mpicomm: Any, error: KsptraceError | None, tmp: Path) -> None:
    """Collective: when any rank failed, rank 0 removes ``tmp`` and every rank raises."""
    try:
        agree_on_error(mpicomm, error)
    except KsptraceError:
        if mpicomm.Get_rank() == 0:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise


def write_distributed(
    mpicomm: Any,
    path: Path,
    local: LocalRecord,
    attrs: Mapping[str, AttrValue | None],
    mode: str,
    overwrite: bool,
) -> Path:
    """Collective: write the trace of all ranks to ``path``; returns the path on every rank."""
    rank = mpicomm.Get_rank()
    nprocs = mpicomm.Get_size()
    lengths = mpicomm.allgather(int(local.stamps.shape[0]))
    if len(set(lengths)) != 1:
        raise RuntimeError(f"ranks recorded different numbers of monitor calls: {lengths}")
    token = mpicomm.bcast(temporaries.new_token() if rank == 0 else None, root=0)
    tmp = temporaries.temp_path_for(path, token)
    if mode == "mpio":
        _write_mpio(mpicomm, tmp, local, attrs, nprocs, lengths[0])
    else:
        _write_gathered(mpicomm, tmp, local, attrs)
    error: KsptraceError | None = None
    if rank == 0:
        try:
            lifeline.check_launcher_alive()  # a solve whose launcher died leaves no trace
            publish.publish(tmp, path, overwrite)
        except KsptraceError as exc:
            error = exc
    _agree(mpicomm, error, tmp)
    return path


def _write_mpio(
    mpicomm: Any,
    tmp: Path,
    local: LocalRecord,
    attrs: Mapping[str, AttrValue | None],
    nprocs: int,
    nstamps: int,
) -> None:
    create_on_root(mpicomm, tmp, nprocs, nstamps, attrs, injected=local.injected is not None,
                   waits=local.wait_seconds is not None,
                   events=local.event_seconds is not None)
    fill_rows(mpicomm, tmp, local)


def create_on_root(
    mpicomm: Any, tmp: Path, nprocs: int, nstamps: int, attrs: Mapping[str, AttrValue | None],
    injected: bool = False, waits: bool = False, events: bool = False,
) -> None:
    """Collective: rank 0 creates the whole file serially; every rank then sees it, or all
    raise the same OutputError and no file is left."""
    rank = mpicomm.Get_rank()
    error: KsptraceError | None = None
    if rank == 0:
        try:
            write.write_image(tmp, write.placeholder_image(nprocs, nstamps, attrs,
                                                           injected=injected, waits=waits,
                                                           events=events))
        except KsptraceError as exc:
            error = exc
    _agree(mpicomm, error, tmp)
    if not tmp.is_file():
        error = OutputError(
            f"rank {rank} cannot see {tmp}, which rank 0 created: --hdf5-path mpio needs an "
            "--out folder shared by all ranks; use --hdf5-path gather"
        )
    _agree(mpicomm, error, tmp)


def fill_rows(mpicomm: Any, tmp: Path, local: LocalRecord) -> None:
    """Collective: each rank writes its rows into the file :func:`create_on_root` made.

    Rows go into space already allocated and no metadata changes, so a failed write leaves
    every rank's HDF5 state alike and the collective close takes the same path on all ranks;
    the ranks then agree on any failure (OutputError on all, no file left).
    """
    rank = mpicomm.Get_rank()
    error: KsptraceError | None = None
    try:
        f = h5py.File(tmp, "r+", driver="mpio", comm=mpicomm)
    except (OSError, RuntimeError) as exc:
        if rank == 0:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        # Last resort: the ranks whose open succeeded cannot close collectively without this
        # one, so this error is not agreed on; fail_together aborts the job.
        raise OutputError(f"rank {rank} cannot open {tmp} through MPI-IO: {exc}") from None
    try:
        _write_rows(f, rank, local)
    except (OSError, RuntimeError) as exc:
        error = OutputError(f"rank {rank}: {publish.describe_write_error(exc, tmp, 0)}")
    try:
        f.close()
    except (OSError, RuntimeError) as exc:
        error = error or OutputError(f"rank {rank} cannot close {tmp}: {exc}; pick another --out")
    _agree(mpicomm, error, tmp)


def _write_rows(f: h5py.File, rank: int, local: LocalRecord) -> None:
    f["stamps"][rank] = local.stamps
    _maybe_fault(rank)
    f["iteration_seconds"][rank] = np.diff(local.stamps)
    f["node_ids"][rank] = local.node_id
    f["hostnames"][rank : rank + 1] = layout.encode_hostnames([local.hostname])  # UTF-8 dtype kept
    f["solve_seconds"][rank] = local.solve_seconds
    if local.injected is not None:
        f["injected_seconds"][rank] = local.injected
    if local.wait_seconds is not None:
        f["wait_seconds"][rank] = local.wait_seconds
        f["mpi_calls"][rank] = local.mpi_calls
    if local.event_seconds is not None:
        f["event_seconds"][rank] = local.event_seconds
    if rank == 0:
        f["residual_norms"][...] = local.residual_norms


def _write_gathered(
    mpicomm: Any, tmp: Path, local: LocalRecord, attrs: Mapping[str, AttrValue | None]
) -> None:
    rows = mpicomm.gather(local, root=0)
    error: KsptraceError | None = None
    if mpicomm.Get_rank() == 0:
        trace = Trace(
            stamps=np.stack([r.stamps for r in rows]),
            residual_norms=rows[0].residual_norms,
            node_ids=np.array([r.node_id for r in rows]),
            hostnames=tuple(r.hostname for r in rows),
            solve_seconds=np.array([r.solve_seconds for r in rows]),
            attrs={k: v for k, v in attrs.items() if v is not None},
            injected_seconds=None if rows[0].injected is None
            else np.stack([r.injected for r in rows]),
            wait_seconds=None if rows[0].wait_seconds is None
            else np.stack([r.wait_seconds for r in rows]),
            mpi_calls=None if rows[0].mpi_calls is None
            else np.stack([r.mpi_calls for r in rows]),
            event_seconds=None if rows[0].event_seconds is None
            else np.stack([r.event_seconds for r in rows]),
        )
        try:
            write.write_file(tmp, trace, midway=lambda: _maybe_fault(0))
        except KsptraceError as exc:
            error = exc
    _agree(mpicomm, error, tmp)
