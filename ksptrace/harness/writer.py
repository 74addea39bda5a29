"""Writing one run's trace from all ranks: in parallel through MPI-IO, or gathered to rank 0.

Either way the file appears under its final name only when complete (temporary name, then an
atomic rename on rank 0), so a killed run never leaves a half-written trace.
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

from ksptrace.errors import UsageError
from ksptrace.trace import io
from ksptrace.trace.model import AttrValue, Trace

FAULT_ENV = "KSPTRACE_FAULT"
"""Fault injection for tests: 'kill-during-write' makes rank 0 SIGKILL itself mid-write."""


@dataclass(frozen=True)
class LocalRecord:
    """What one rank contributes to the trace."""

    stamps: np.ndarray
    residual_norms: np.ndarray
    node_id: int
    hostname: str
    solve_seconds: float


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
    if os.environ.get(FAULT_ENV) == "kill-during-write" and rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)


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
    token = mpicomm.bcast(os.urandom(6).hex() if rank == 0 else None, root=0)
    tmp = io.temp_path_for(path, token)
    if mode == "mpio":
        _write_mpio(mpicomm, tmp, local, attrs, nprocs, lengths[0])
    else:
        _write_gathered(mpicomm, tmp, local, attrs)
    error: str | None = None
    if rank == 0:
        try:
            io.publish(tmp, path, overwrite)
        except UsageError as exc:
            error = str(exc)
    error = mpicomm.bcast(error, root=0)
    if error:
        raise UsageError(error)
    return path


def _write_mpio(
    mpicomm: Any,
    tmp: Path,
    local: LocalRecord,
    attrs: Mapping[str, AttrValue | None],
    nprocs: int,
    nstamps: int,
) -> None:
    rank = mpicomm.Get_rank()
    try:
        with h5py.File(tmp, "w", driver="mpio", comm=mpicomm) as f:
            ds = io.create_layout(f, nprocs, nstamps)
            io.write_attrs(f, attrs)
            ds["stamps"][rank] = local.stamps
            _maybe_fault(rank)
            ds["iteration_seconds"][rank] = np.diff(local.stamps)
            ds["node_ids"][rank] = local.node_id
            ds["hostnames"][rank] = io.encode_hostnames([local.hostname])[0]
            ds["solve_seconds"][rank] = local.solve_seconds
            if rank == 0:
                ds["residual_norms"][...] = local.residual_norms
    except BaseException:
        if rank == 0:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise


def _write_gathered(
    mpicomm: Any, tmp: Path, local: LocalRecord, attrs: Mapping[str, AttrValue | None]
) -> None:
    rows = mpicomm.gather(local, root=0)
    if mpicomm.Get_rank() != 0:
        return
    trace = Trace(
        stamps=np.stack([r.stamps for r in rows]),
        residual_norms=rows[0].residual_norms,
        node_ids=np.array([r.node_id for r in rows]),
        hostnames=tuple(r.hostname for r in rows),
        solve_seconds=np.array([r.solve_seconds for r in rows]),
        attrs={k: v for k, v in attrs.items() if v is not None},
    )
    try:
        with h5py.File(tmp, "w") as f:
            io.fill_file(f, trace, after_stamps=lambda: _maybe_fault(0))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
