"""The HDF5 layout of a trace file: its datasets, their axes, and how a trace fills them.

Schema 2 keeps ``schema_version`` on the file's root, every other attribute in a group named
as in :data:`ksptrace.trace.model.ATTRIBUTE_GROUPS`, and gives each dataset's axes dimension
scales (``rank``, ``stamp``, ``iteration``). Schema 3, written only for a trace of several
solves, adds the group ``solves`` (:data:`SOLVE_DATASETS`); a trace of one solve is still
written as schema 2. Schema-1 files, with all attributes on the root and no scales, are read
too (:mod:`ksptrace.trace.read`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import h5py
import numpy as np

from ksptrace.trace import iteration_events
from ksptrace.trace.model import (
    ATTRIBUTE_GROUPS,
    ONE_SOLVE_SCHEMA,
    SCHEMA_VERSION,
    AttrValue,
    Solves,
    Trace,
    attribute_group,
)

HOSTNAME_BYTES = 64
"""The longest host name kept, in UTF-8 bytes (Linux's HOST_NAME_MAX).

Host names are stored fixed-length, because ranks write their own row in parallel and HDF5
cannot write variable-length strings through MPI-IO. The file type is UTF-8 with a terminating
NUL (``H5T_STR_NULLTERM``, one byte more than this), so that h5dump and netCDF readers show the
names without padding; schema-1 files padded them with NULs (``S64``), which reads the same."""


HOSTNAME_DTYPE = h5py.string_dtype("utf-8", HOSTNAME_BYTES)
"""The in-memory type of host names on their way into a file (h5py converts the padding)."""


DATASETS: dict[str, str] = {
    "stamps": "float64 [P, K+1]: MPI.Wtime() at each KSP monitor call, per rank (seconds)",
    "iteration_seconds": "float64 [P, K]: T_p^k = stamps[:, 1:] - stamps[:, :-1]",
    "residual_norms": "float64 [K+1]: residual norm passed to the KSP monitor",
    "node_ids": "int64 [P]: node (shared-memory domain) of each rank, 0-based",
    "hostnames": f"UTF-8 string of up to {HOSTNAME_BYTES} bytes [P]: host name of each rank",
    "solve_seconds": "float64 [P]: KSPSolve time of each rank (how: attribute solve_time_source)",
}


OPTIONAL_DATASETS: dict[str, str] = {
    "injected_seconds": "float64 [P, K]: detours injected into each iteration (runs with noise)",
    "wait_seconds": "float64 [P, K]: time inside the solve's MPI reductions in each iteration",
    "mpi_calls": "int64 [P, K]: MPI reductions started in each iteration",
    "event_seconds": "float64 [P, K, E]: time in MatMult, PCApply and VecMDot + VecNorm + "
                     "VecDot in each iteration (runs with --events)",
}
WAIT_DATASETS = ("wait_seconds", "mpi_calls")
"""Written together, by runs with MPI wait accounting
(:mod:`ksptrace.harness.monitoring.mpiwait`)."""


COORDINATES: dict[str, str] = {
    "rank": "int64 [P]: 0..P-1, the rank of each row",
    "stamp": "int64 [K+1]: 0..K, the monitor call of each column of stamps and residual_norms",
    "iteration": "int64 [K]: 1..K, the iteration k of each column of iteration_seconds",
    "event": "int64 [E]: 0..E-1, the kinds of event_seconds (their names: attribute events)",
}
"""Dimension scales (schema 2 on): they name the axes of the datasets for netCDF tools such as
xarray. Readers of ksptrace need none of them."""


DIMENSIONS: dict[str, tuple[str, ...]] = {
    "stamps": ("rank", "stamp"),
    "iteration_seconds": ("rank", "iteration"),
    "residual_norms": ("stamp",),
    "node_ids": ("rank",),
    "hostnames": ("rank",),
    "solve_seconds": ("rank",),
    "injected_seconds": ("rank", "iteration"),
    "wait_seconds": ("rank", "iteration"),
    "mpi_calls": ("rank", "iteration"),
    "event_seconds": ("rank", "iteration", "event"),
}
"""The coordinate of each axis of each dataset."""


_DTYPES: dict[str, str] = {"node_ids": "i8", "mpi_calls": "i8"}


SOLVES_GROUP = "solves"


SOLVE_DATASETS: dict[str, str] = {
    "offsets": "int64 [S+1]: solve s holds columns offsets[s]:offsets[s+1] of stamps",
    "seconds": "float64 [P, S]: each solve's KSPSolve time on each rank (PETSc's event log)",
    "reasons": "UTF-8 strings [S]: each solve's KSPConvergedReason",
    "petsc_iterations": "int64 [S]: the iteration count PETSc reported after each solve",
}
"""The group of a trace of several solves (schema 3). ``stamps`` and ``residual_norms`` then
hold the solves one after the other, ``iteration_seconds`` every solve's iterations (never the
gap between two solves) and ``solve_seconds`` each rank's total."""
"""Dataset types other than float64 (host names have their own, see :func:`_create_hostnames`)."""


def encode_hostnames(names: list[str] | tuple[str, ...]) -> np.ndarray:
    """Host names as UTF-8 bytes ready for the ``hostnames`` dataset: NULs dropped, each cut to
    :data:`HOSTNAME_BYTES` bytes without splitting a character."""
    cut = [
        n.replace("\x00", "").encode("utf-8")[:HOSTNAME_BYTES].decode("utf-8", "ignore")
        for n in names
    ]
    return np.array([c.encode("utf-8") for c in cut], dtype=HOSTNAME_DTYPE)


def write_attrs(
    f: h5py.File, attrs: Mapping[str, AttrValue | None], version: int = ONE_SOLVE_SCHEMA
) -> None:
    """Write ``schema_version`` on the root and every other attribute into its group.

    All groups of :data:`ATTRIBUTE_GROUPS` are created, empty ones too, so that a reader can
    open any of them. Attributes whose value is None are left out.
    """
    f.attrs["schema_version"] = version
    groups = {name: f.create_group(name) for name in ATTRIBUTE_GROUPS}
    for key, value in attrs.items():
        if value is None or key == "schema_version":
            continue
        stored = value.replace("\x00", "") if isinstance(value, str) else value
        groups[attribute_group(key)].attrs[key] = stored


def _create_hostnames(f: h5py.File, nprocs: int) -> h5py.Dataset:
    """The ``hostnames`` dataset: fixed-length, NUL-terminated UTF-8 (see HOSTNAME_BYTES)."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(HOSTNAME_BYTES + 1)
    tid.set_strpad(h5py.h5t.STR_NULLTERM)
    tid.set_cset(h5py.h5t.CSET_UTF8)
    h5py.h5d.create(f.id, b"hostnames", tid, h5py.h5s.create_simple((nprocs,)))
    ds = f["hostnames"]
    ds.attrs["_Encoding"] = "utf-8"  # netCDF's convention: xarray then shows text, not bytes
    return ds


def create_layout(
    f: h5py.File, nprocs: int, nstamps: int, injected: bool = False, solves: int = 1,
    waits: bool = False, events: bool = False,
) -> dict[str, h5py.Dataset]:
    """Create every dataset (``injected_seconds`` only for a run with injected noise,
    :data:`WAIT_DATASETS` only for one with wait accounting, ``event_seconds`` only for one
    with ``--events``), and the coordinates of :data:`COORDINATES` they use, filled, as the
    dimension scales of their axes.

    Returns the datasets still to be filled, by name (not the coordinates).
    """
    sizes = {"rank": nprocs, "stamp": nstamps, "iteration": nstamps - solves,
             "event": len(iteration_events.EVENTS)}
    scales: dict[str, h5py.Dataset] = {}
    for name, first in (("rank", 0), ("stamp", 0), ("iteration", 1),
                        *((("event", 0),) if events else ())):
        scale = f.create_dataset(name, data=np.arange(first, first + sizes[name], dtype="i8"))
        scale.make_scale(name)
        scales[name] = scale
    if events:
        scales["event"].attrs["events"] = ",".join(iteration_events.EVENTS)
    names = [*DATASETS, *(["injected_seconds"] if injected else ()),
             *(WAIT_DATASETS if waits else ()), *(["event_seconds"] if events else ())]
    made: dict[str, h5py.Dataset] = {}
    for name in names:
        dims = DIMENSIONS[name]
        if name == "hostnames":
            ds = _create_hostnames(f, nprocs)
        else:
            shape = tuple(sizes[d] for d in dims)
            ds = f.create_dataset(name, shape, dtype=_DTYPES.get(name, "f8"))
        for axis, dim in enumerate(dims):
            ds.dims[axis].attach_scale(scales[dim])
            ds.dims[axis].label = dim
        made[name] = ds
    return made


def fill_file(f: h5py.File, trace: Trace, after_stamps: Callable[[], None] | None = None) -> None:
    """Write every dataset and attribute of ``trace`` into the open file ``f``."""
    count = 1 if trace.solves is None else trace.solves.count
    ds = create_layout(f, trace.nprocs, trace.stamps.shape[1],
                       injected=trace.injected_seconds is not None, solves=count,
                       waits=trace.wait_seconds is not None,
                       events=trace.event_seconds is not None)
    write_attrs(f, trace.attrs, ONE_SOLVE_SCHEMA if trace.solves is None else SCHEMA_VERSION)
    if trace.solves is not None:
        _write_solves(f, trace.solves)
    if trace.injected_seconds is not None:
        ds["injected_seconds"][...] = trace.injected_seconds
    if trace.wait_seconds is not None:
        ds["wait_seconds"][...] = trace.wait_seconds
        ds["mpi_calls"][...] = trace.mpi_calls
    if trace.event_seconds is not None:
        ds["event_seconds"][...] = trace.event_seconds
    ds["stamps"][...] = trace.stamps
    if after_stamps is not None:
        after_stamps()
    ds["iteration_seconds"][...] = trace.iteration_seconds
    ds["residual_norms"][...] = trace.residual_norms
    ds["node_ids"][...] = trace.node_ids
    ds["hostnames"][...] = encode_hostnames(trace.hostnames)
    ds["solve_seconds"][...] = trace.solve_seconds


def _write_solves(f: h5py.File, solves: Solves) -> None:
    g = f.create_group(SOLVES_GROUP)
    g.create_dataset("offsets", data=solves.offsets, dtype="i8")
    g.create_dataset("seconds", data=solves.seconds, dtype="f8")
    g.create_dataset("reasons", data=list(solves.reasons), dtype=h5py.string_dtype("utf-8"))
    g.create_dataset("petsc_iterations", data=solves.petsc_iterations, dtype="i8")
    for name, text in SOLVE_DATASETS.items():
        g[name].attrs["description"] = text
