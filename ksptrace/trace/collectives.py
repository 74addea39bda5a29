"""Collectives traces: per-rank, per-message-size, per-repetition times of one MPI collective.

Same conventions as solver traces (schema 2): one HDF5 file per run, written under a hidden
temporary name and renamed when complete; ``schema_version`` on the root, the attributes in
the groups of :data:`ksptrace.trace.model.ATTRIBUTE_GROUPS` (``run``, ``layout``,
``provenance``, ...); every axis a dimension scale. ``run.attrs["kind"] == "collectives"``
tells it from a solver trace.

| dataset | shape | dimensions |
|---|---|---|
| ``seconds`` | [P, M, R] float64 | rank, message_bytes, repetition |
| ``comm_seconds``, ``compute_seconds`` | [P, M, R], overlap runs only | same |
| ``send_overhead_seconds``, ``recv_overhead_seconds``, | [P, M, R], plogp runs only | same |
| ``gap_seconds`` | | |
| ``node_ids`` | [P] int64 | rank |
| ``hostnames`` | [P] UTF-8 | rank |

This module imports h5py, never mpi4py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from types import MappingProxyType

import h5py
import numpy as np

from ksptrace.errors import TraceError
from ksptrace.trace import checks, fields, layout, probe, publish, temporaries
from ksptrace.trace.model import SCHEMA_VERSION, AttrValue
from ksptrace.trace.write import write_image

KIND = "collectives"
OVERLAP_DATASETS = ("comm_seconds", "compute_seconds")
"""Overlap runs time, in each repetition, the collective alone and the compute alone too."""
PLOGP_DATASETS = ("send_overhead_seconds", "recv_overhead_seconds", "gap_seconds")
"""PLogP runs (``operation == "plogp"``) measure these beside ``seconds`` (half a round trip);
the gap is a difference of two times and may be slightly negative where it is tiny."""


@dataclass(frozen=True)
class CollectiveTrace:
    """One run of one collective: raw times, per rank, message size and repetition."""

    seconds: np.ndarray
    """float64 [P, M, R]: time of each call, each rank's own MPI_Wtime difference."""
    message_bytes: np.ndarray
    """int64 [M]: message size of each column (bytes per rank)."""
    node_ids: np.ndarray
    hostnames: tuple[str, ...]
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)
    comm_seconds: np.ndarray | None = None
    compute_seconds: np.ndarray | None = None
    parts: Mapping[str, np.ndarray] | None = None
    """plogp runs: each of PLOGP_DATASETS, float64 [P, M, R]."""

    def __post_init__(self) -> None:
        s = np.asarray(self.seconds, dtype=np.float64)
        if s.ndim != 3 or s.shape[1] != np.asarray(self.message_bytes).size:
            raise TraceError(f"seconds must be [P, M, R] with M = {self.message_bytes.size} "
                             f"message sizes, got shape {s.shape}")
        if np.asarray(self.node_ids).shape != (s.shape[0],) or len(self.hostnames) != s.shape[0]:
            raise TraceError("node_ids and hostnames need one entry per rank")
        for name in OVERLAP_DATASETS:
            extra = getattr(self, name)
            if extra is not None and np.asarray(extra).shape != s.shape:
                raise TraceError(f"{name} must have the shape of seconds {s.shape}")
        if self.parts is not None:
            if set(self.parts) != set(PLOGP_DATASETS):
                raise TraceError(f"a plogp trace holds {', '.join(PLOGP_DATASETS)}")
            parts = {k: np.asarray(v, np.float64) for k, v in self.parts.items()}
            if any(v.shape != s.shape for v in parts.values()):
                raise TraceError(f"the plogp datasets must have the shape of seconds {s.shape}")
            object.__setattr__(self, "parts", MappingProxyType(parts))
        object.__setattr__(self, "seconds", s)
        object.__setattr__(self, "message_bytes", np.asarray(self.message_bytes, np.int64))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))

    def __reduce__(self) -> tuple[type[CollectiveTrace], tuple[object, ...]]:
        """Pickled with plain attributes (a mapping proxy cannot be), e.g. from a reader child."""
        return (CollectiveTrace, (self.seconds, self.message_bytes, self.node_ids,
                                  self.hostnames, dict(self.attrs), self.comm_seconds,
                                  self.compute_seconds,
                                  None if self.parts is None else dict(self.parts)))

    @property
    def nprocs(self) -> int:
        return int(self.seconds.shape[0])

    @property
    def repetitions(self) -> int:
        return int(self.seconds.shape[2])

    @property
    def operation(self) -> str:
        return str(self.attrs.get("operation", "?"))

    @property
    def algorithm(self) -> str:
        return str(self.attrs.get("algorithm_name", "default"))

    def call_seconds(self) -> np.ndarray:
        """float64 [M, R]: the time of each call, the slowest rank's (a collective ends for
        the application when its last rank leaves it)."""
        return self.seconds.max(axis=0)


def _scale(f: h5py.File, name: str, values: np.ndarray) -> h5py.Dataset:
    ds = f.create_dataset(name, data=values)
    ds.make_scale(name)
    return ds


def image(trace: CollectiveTrace) -> memoryview:
    """The bytes of the trace's HDF5 file, built in memory."""
    buf = BytesIO()
    p, _m, r = trace.seconds.shape
    with h5py.File(buf, "w") as f:
        layout.write_attrs(f, {**trace.attrs, "kind": KIND})
        scales = {"rank": _scale(f, "rank", np.arange(p, dtype=np.int64)),
                  "message_bytes": _scale(f, "message_bytes", trace.message_bytes),
                  "repetition": _scale(f, "repetition", np.arange(1, r + 1, dtype=np.int64))}
        cube = {"seconds": trace.seconds}
        for name in OVERLAP_DATASETS:
            if getattr(trace, name) is not None:
                cube[name] = np.asarray(getattr(trace, name), np.float64)
        cube.update(trace.parts or {})
        for name, data in cube.items():
            ds = f.create_dataset(name, data=data)
            for axis, dim in enumerate(("rank", "message_bytes", "repetition")):
                ds.dims[axis].attach_scale(scales[dim])
                ds.dims[axis].label = dim
        nodes = f.create_dataset("node_ids", data=np.asarray(trace.node_ids, np.int64))
        f.create_dataset("hostnames", data=layout.encode_hostnames(trace.hostnames))
        f["hostnames"].attrs["_Encoding"] = "utf-8"  # netCDF readers (xarray) show text
        for ds in (nodes, f["hostnames"]):
            ds.dims[0].attach_scale(scales["rank"])
            ds.dims[0].label = "rank"
    return buf.getbuffer()


def write(trace: CollectiveTrace, path: str | os.PathLike[str], overwrite: bool = False) -> Path:
    """Write atomically: a complete file under a temporary name, then renamed."""
    final = Path(path)
    publish.check_destination(final, overwrite)
    tmp = temporaries.temp_path_for(final)
    write_image(tmp, image(trace))
    publish.publish(tmp, final, overwrite)
    return final


def is_collectives(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a collectives trace (False for solver traces, other files, files
    that are not regular, and files on which HDF5 crashes or hangs: read in a child)."""
    p = Path(path)
    try:
        return probe.in_child(lambda: _is_collectives(p), p)
    except TraceError:
        return False


SECONDS_PER_PROBED_FILE = 0.05
"""What one child classifying many files allows per file, beyond probe.limit_for their size."""


def collectives_flags(paths: Sequence[str | os.PathLike[str]]) -> list[bool]:
    """:func:`is_collectives` of every path, all classified by one child: one fork for a
    campaign's thousand traces instead of one each (15 ms apiece). When that child crashes or
    hangs on a damaged file, every file is classified again in a child of its own, so the
    answers are those of :func:`is_collectives` whatever happens."""
    ps = [Path(p) for p in paths]
    sizes: dict[int, int] = {}
    for i, p in enumerate(ps):
        with contextlib.suppress(TraceError):
            sizes[i] = probe.regular_file(p)
    if len(sizes) < 2:
        return [is_collectives(p) for p in ps]
    order = sorted(sizes)
    limit = (probe.limit_for(sum(sizes.values())) + SECONDS_PER_PROBED_FILE * len(order))
    try:
        found = probe.in_child(lambda: [_is_collectives(ps[i]) for i in order], ps[order[0]],
                               limit)
    except TraceError:
        return [is_collectives(p) for p in ps]
    flags = dict(zip(order, found, strict=True))
    return [flags.get(i, False) for i in range(len(ps))]


def _is_collectives(p: Path) -> bool:
    try:
        with h5py.File(p, "r") as f:
            return "run" in f and f["run"].attrs.get("kind") == KIND
    except (OSError, ValueError):
        return False


def read(path: str | os.PathLike[str]) -> CollectiveTrace:
    """Read and check a collectives trace; TraceError with the reason when it is not one (the
    file is read in a forked child: see :mod:`ksptrace.trace.probe`)."""
    p = Path(path)
    return probe.in_child(lambda: _read(p), p)


def _read(p: Path) -> CollectiveTrace:
    try:
        with h5py.File(p, "r") as f:
            version = checks.schema_version_of(f.attrs.get("schema_version"))
            if version > SCHEMA_VERSION:
                raise TraceError(f"{p} has schema {version}, newer than this ksptrace's "
                                 f"{SCHEMA_VERSION}; upgrade ksptrace")
            attrs = fields.file_attrs(f)
            if attrs.get("kind") != KIND:
                raise TraceError(f"{p} is not a collectives trace (no run/kind = {KIND}); "
                                 "solver traces are read with ksptrace.trace.io.read_trace")
            limit = checks.MAX_SIZE_RATIO * p.stat().st_size + (1 << 20)
            for name in ("seconds", *OVERLAP_DATASETS, *PLOGP_DATASETS, "message_bytes",
                         "node_ids"):
                if name in f and f[name].size * f[name].dtype.itemsize > limit:
                    raise TraceError(f"{p}: dataset {name} declares {f[name].shape}, far more "
                                     "data than the file holds; the file is corrupt")
            extra = {n: f[n][...] for n in OVERLAP_DATASETS if n in f}
            parts = ({n: f[n][...] for n in PLOGP_DATASETS}
                     if any(n in f for n in PLOGP_DATASETS) else None)
            trace = CollectiveTrace(
                seconds=f["seconds"][...], message_bytes=f["message_bytes"][...],
                node_ids=f["node_ids"][...],
                hostnames=tuple(h.decode() if isinstance(h, bytes) else str(h)
                                for h in f["hostnames"][...]),
                attrs=attrs, parts=parts, **extra)
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise TraceError(f"cannot read {p} as a collectives trace: {exc}") from None
    if not np.isfinite(trace.seconds).all() or (trace.seconds < 0).any():
        raise TraceError(f"{p} holds negative or non-finite times; the file is corrupt")
    return trace
