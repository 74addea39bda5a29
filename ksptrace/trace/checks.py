"""The checks a trace file passes before any of its data are read: the schema version, every
dataset's kind, dtype and shape, sizes no larger than the file can hold, and the solves group.

Each raises TraceError without the file name; the reader adds it.
"""

from __future__ import annotations

import math
from typing import Any

import h5py
import numpy as np

from ksptrace.errors import TraceError
from ksptrace.trace.iteration_events import EVENTS
from ksptrace.trace.layout import DATASETS, SOLVE_DATASETS, SOLVES_GROUP
from ksptrace.trace.model import (
    SCHEMA_VERSION,
    Solves,
    Trace,
)


def read_solves(f: h5py.File, nprocs: int, nstamps: int, limit: int) -> Solves:
    """The solves group of a schema-3 trace, checked before it is read."""
    g = f[SOLVES_GROUP]
    if not isinstance(g, h5py.Group):
        raise TraceError(f"{SOLVES_GROUP} is not a group; a schema-3 trace keeps its solves "
                         "in a group of that name")
    missing = [name for name in SOLVE_DATASETS if name not in g]
    if missing:
        raise TraceError(f"incomplete solves group, missing {', '.join(missing)}")
    kinds = {"offsets": "iu", "seconds": "f", "reasons": "SO", "petsc_iterations": "iu"}
    for name, allowed in kinds.items():
        ds = g[name]
        if not isinstance(ds, h5py.Dataset) or ds.dtype.kind not in allowed:
            raise TraceError(f"solves/{name} is not {SOLVE_DATASETS[name].split(':')[0]}")
        if math.prod(ds.shape or ()) * max(ds.dtype.itemsize, 1) > limit:
            raise TraceError(f"solves/{name} declares shape {ds.shape}, more than the file holds")
    count = int((g["offsets"].shape or (0,))[0]) - 1
    shapes = {"offsets": (count + 1,), "seconds": (nprocs, count), "reasons": (count,),
              "petsc_iterations": (count,)}
    for name, shape in shapes.items():
        if count < 1 or tuple(g[name].shape or ()) != shape:
            raise TraceError(f"solves/{name} has shape {g[name].shape}, expected {shape}")
    reasons = tuple(r.decode("utf-8") if isinstance(r, bytes) else str(r)
                    for r in g["reasons"][...])
    solves = Solves(np.asarray(g["offsets"][...]), np.asarray(g["seconds"][...]), reasons,
                    np.asarray(g["petsc_iterations"][...]))
    if solves.offsets[-1] != nstamps:
        raise TraceError(f"the solves end at stamp {solves.offsets[-1]}, the stamps at {nstamps}")
    return solves


MAX_SIZE_RATIO = 16
"""A dataset may declare at most this many times the file's size (plus 1 MiB) of data.

Real traces store every value (contiguous, uncompressed; a repacked file compresses timings
less than 2:1), so a larger declared shape is a crafted or corrupt file, refused before any data
are read (chunked datasets with no data written cost nothing to create)."""


_KINDS: dict[str, tuple[str, str]] = {
    "stamps": ("f", "a float array"),
    "iteration_seconds": ("f", "a float array"),
    "residual_norms": ("f", "a float array"),
    "solve_seconds": ("f", "a float array"),
    "node_ids": ("iu", "an integer array"),
    "hostnames": ("S", "an array of strings"),
}


_OPTIONAL_KINDS: dict[str, tuple[str, str]] = {
    "injected_seconds": ("f", "a float array"),
    "wait_seconds": ("f", "a float array"),
    "mpi_calls": ("iu", "an integer array"),
    "event_seconds": ("f", "a float array"),
}


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} PiB"


def schema_version_of(raw: Any) -> int:
    """The schema version an attribute value states; TraceError (without the file) if none.

    Only a positive integer scalar is a version: not a bool, float, complex, text or array.
    """
    if isinstance(raw, np.ndarray) and raw.shape == ():
        raw = raw[()]
    if isinstance(raw, bool | np.bool_) or not isinstance(raw, int | np.integer):
        shown = f"an array of shape {raw.shape}" if isinstance(raw, np.ndarray) else repr(raw)
        raise TraceError(
            f"schema_version {shown[:60]} is not a positive integer; not a ksptrace trace"
        )
    version = int(raw)
    if version < 1:
        raise TraceError(
            f"schema_version {version} is not a positive integer; not a ksptrace trace"
        )
    if version > SCHEMA_VERSION:
        raise TraceError(
            f"written with trace schema {version}, newer than this ksptrace reads "
            f"({SCHEMA_VERSION}); upgrade ksptrace"
        )
    return version


def check_layout(f: h5py.File, file_bytes: int) -> None:
    """Check every dataset's kind, dtype and shape, and its declared size against the file's,
    before reading any data. Raises TraceError (without the file name)."""
    missing = [name for name in DATASETS if name not in f]
    if missing:
        raise TraceError(f"incomplete trace, missing datasets {', '.join(missing)}")
    limit = MAX_SIZE_RATIO * file_bytes + 2**20
    shapes: dict[str, tuple[int, ...]] = {}
    present = {k: v for k, v in _OPTIONAL_KINDS.items() if k in f}
    for name, (kinds, what) in {**_KINDS, **present}.items():
        obj = f.get(name, getclass=True)
        if obj is not h5py.Dataset:
            kind = "a group" if obj is h5py.Group else "not a dataset"
            raise TraceError(f"{name} is {kind}; a trace stores it as {what}")
        ds = f[name]
        dtype = ds.dtype
        if dtype.kind not in kinds and not (
            kinds == "S" and h5py.check_string_dtype(dtype) is not None
        ):
            raise TraceError(f"{name} has dtype {dtype}; a trace stores it as {what}")
        shape = tuple(int(n) for n in ds.shape or ())
        declared = math.prod(shape) * max(dtype.itemsize, 1)
        if declared > limit:
            raise TraceError(
                f"{name} declares shape {shape}, {_human(declared)} of data, larger than a "
                f"{_human(file_bytes)} file can hold; the file is corrupt or was not written by "
                "ksptrace"
            )
        shapes[name] = shape
    stamps = shapes["stamps"]
    if len(stamps) != 2 or stamps[0] < 1 or stamps[1] < 1 or (
            stamps[1] < 2 and SOLVES_GROUP not in f):
        raise TraceError(
            f"stamps has shape {stamps}, expected [P >= 1, K+1 >= 2]; the run recorded no iteration"
        )
    nprocs, nstamps = stamps
    count = 1
    if SOLVES_GROUP in f and "offsets" in f[SOLVES_GROUP]:
        count = max(int((f[SOLVES_GROUP]["offsets"].shape or (2,))[0]) - 1, 1)
    expected = {
        "iteration_seconds": (nprocs, nstamps - count),
        "residual_norms": (nstamps,),
        "solve_seconds": (nprocs,),
        "node_ids": (nprocs,),
        "hostnames": (nprocs,),
    }
    if "injected_seconds" in present:
        expected["injected_seconds"] = (nprocs, nstamps - 1)
    for name in ("wait_seconds", "mpi_calls"):
        if name in present:
            expected[name] = (nprocs, nstamps - count)
    if "event_seconds" in present:
        expected["event_seconds"] = (nprocs, nstamps - count, len(EVENTS))
    for name, shape in expected.items():
        if shapes[name] != shape:
            raise TraceError(
                f"{name} has shape {shapes[name]}, expected {shape} for stamps of shape {stamps}"
            )


def check_finite(trace: Trace) -> None:
    """Raise TraceError when a trace's timings are implausible (see :meth:`Trace.timing_fault`)."""
    fault = trace.timing_fault()
    if fault is not None:
        raise TraceError(f"{trace.path or trace.label}: {fault}; the trace cannot be analysed")
