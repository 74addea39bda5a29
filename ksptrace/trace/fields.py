"""Reading an open trace file into the fields of a :class:`Trace`: the attributes of either
schema as one flat dict, host names, and the datasets (optionally straight into memory an
allocator hands out).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ksptrace.errors import TraceError
from ksptrace.trace import probe
from ksptrace.trace.checks import (
    MAX_SIZE_RATIO,
    check_finite,
    check_layout,
    read_solves,
    schema_version_of,
)
from ksptrace.trace.layout import SOLVES_GROUP
from ksptrace.trace.model import (
    ATTRIBUTE_GROUPS,
    AttrValue,
    Trace,
)


def _py(value: Any) -> AttrValue | None:
    """An attribute as a Python scalar; None for arrays and types a trace never stores.

    Raises ValueError when text is not valid UTF-8.
    """
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        value.encode("utf-8")  # h5py hands invalid UTF-8 over as lone surrogates
        return value
    if isinstance(value, np.generic):
        value = value.item()
        if isinstance(value, bytes):
            return value.decode("utf-8")
    if isinstance(value, bool | int | float | str):
        return value
    return None


def _attribute_places(f: h5py.File, version: int) -> Iterator[tuple[str, Any]]:
    """Where a trace of schema ``version`` keeps attributes: (name, attribute manager) of the
    root and, from schema 2 on, of each attribute group the file has."""
    yield "the root", f.attrs
    if version < 2:
        return
    for name in ATTRIBUTE_GROUPS:
        kind = f.get(name, getclass=True)
        if kind is None:
            continue  # every attribute is optional, and so is a group without any
        if kind is not h5py.Group:
            what = "a dataset" if kind is h5py.Dataset else "not a group"
            raise TraceError(
                f"{name} is {what}; a schema-{version} trace keeps its {name} attributes in a "
                "group of that name"
            )
        yield f"group {name}", f[name].attrs


def _read_attrs(f: h5py.File, version: int) -> dict[str, AttrValue]:
    """Every attribute as one flat dict, whichever schema laid the file out.

    A name stored in two places is refused: which value holds would be a guess.
    """
    attrs: dict[str, AttrValue] = {}
    seen: dict[str, str] = {}
    for place, manager in _attribute_places(f, version):
        for key in manager:
            shown = key.encode("utf-8", "backslashreplace").decode()
            try:
                key.encode("utf-8")
                value = _py(manager[key])
            except (UnicodeError, ValueError):
                raise TraceError(f"attribute {shown!r} in {place} is not valid UTF-8") from None
            if key in seen:
                raise TraceError(
                    f"attribute {shown!r} is stored twice, in {seen[key]} and in {place}; "
                    "delete one of them"
                )
            seen[key] = place
            if value is not None:
                attrs[key] = value
    return attrs


def file_attrs(f: h5py.File) -> dict[str, AttrValue]:
    """The attributes of the open trace file ``f`` as one flat dict, from any schema this
    ksptrace reads (the dict :attr:`Trace.attrs` holds, ``schema_version`` included).

    Raises TraceError (without the file name) when ``f`` has no valid ``schema_version`` or its
    attributes cannot be read.
    """
    if "schema_version" not in f.attrs:
        raise TraceError("not a ksptrace trace (no schema_version attribute)")
    version = schema_version_of(f.attrs["schema_version"])
    return _read_attrs(f, version)


def _hostnames(raw: np.ndarray) -> tuple[str, ...]:
    try:
        return tuple(
            (h if isinstance(h, bytes | np.bytes_) else str(h).encode("utf-8")).decode("utf-8")
            for h in raw
        )
    except UnicodeError:
        raise TraceError("hostnames are not valid UTF-8") from None


Allocator = Callable[[tuple[int, ...], "np.dtype[Any]"], np.ndarray]
"""Makes the empty array a dataset is read into (shape, dtype)."""


def _load(dataset: h5py.Dataset, alloc: Allocator | None) -> np.ndarray:
    """A dataset's values, read straight into ``alloc``'s array where one is given."""
    if alloc is None or dataset.shape is None:
        return np.asarray(dataset[...])
    out = alloc(tuple(dataset.shape), dataset.dtype)
    if out.size:
        dataset.read_direct(out)
    return out


def read_here(p: Path, file_bytes: int) -> Trace:
    """Read ``p`` here, in this process (see :func:`read_trace` for the checks)."""
    return make_trace(p, read_fields(p, file_bytes))


def read_fields(p: Path, file_bytes: int, alloc: Allocator | None = None) -> dict[str, Any]:
    """The keyword arguments of ``p``'s :class:`Trace`, after the file-level checks.

    The file is opened once, and HDF5 reads it through that descriptor (``/proc/self/fd``):
    a file renamed over ``p`` meanwhile is not read, and the trace's ``source`` names what
    was (None when the file changed while read, or where there is no ``/proc``)."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except PermissionError:
        raise TraceError(f"{p}: permission denied; make the file readable or copy it") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot open ({exc.strerror or exc}); check the path") from None
    try:
        return _read_open(p, fd, file_bytes, alloc)
    finally:
        os.close(fd)


def _read_open(p: Path, fd: int, file_bytes: int, alloc: Allocator | None) -> dict[str, Any]:
    via = Path(f"/proc/self/fd/{fd}")
    pinned = via.exists()
    before = probe.source_of(fd)
    try:
        f = h5py.File(via if pinned else p, "r")
    except PermissionError:
        raise TraceError(f"{p}: permission denied; make the file readable or copy it") from None
    except OSError:
        raise TraceError(
            f"{p}: not a readable HDF5 file (corrupt or truncated); rerun the run that made it"
        ) from None
    try:
        with f:
            fields = _fields(p, f, file_bytes, alloc)
        fields["source"] = before if pinned and probe.source_of(fd) == before else None
        return fields
    except TraceError as exc:
        raise TraceError(f"{p}: {exc}") from None
    except Exception as exc:  # any fault of an untrusted file makes a bad trace
        raise TraceError(_unreadable(p, exc)) from None


def _fields(p: Path, f: h5py.File, file_bytes: int, alloc: Allocator | None) -> dict[str, Any]:
    if "schema_version" not in f.attrs:
        raise TraceError("not a ksptrace trace (no schema_version attribute)")
    version = schema_version_of(f.attrs["schema_version"])
    check_layout(f, file_bytes)
    solves = None
    if version >= 3 and SOLVES_GROUP in f:
        nprocs, nstamps = f["stamps"].shape
        solves = read_solves(f, nprocs, nstamps, MAX_SIZE_RATIO * file_bytes + 2**20)
    return {
        "solves": solves,
        "stamps": _load(f["stamps"], alloc),
        "residual_norms": _load(f["residual_norms"], alloc),
        "node_ids": _load(f["node_ids"], alloc),
        "hostnames": _hostnames(f["hostnames"][...]),
        "solve_seconds": _load(f["solve_seconds"], alloc),
        "attrs": _read_attrs(f, version),
        "path": str(p),
        "injected_seconds": (
            _load(f["injected_seconds"], alloc) if "injected_seconds" in f else None
        ),
        "wait_seconds": _load(f["wait_seconds"], alloc) if "wait_seconds" in f else None,
        "mpi_calls": _load(f["mpi_calls"], alloc) if "mpi_calls" in f else None,
        "event_seconds": _load(f["event_seconds"], alloc) if "event_seconds" in f else None,
    }


def _unreadable(p: Path, exc: BaseException) -> str:
    reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
    return f"{p}: unreadable trace ({reason}); rerun the run that made it"


def make_trace(p: Path, fields: dict[str, Any], durations: np.ndarray | None = None) -> Trace:
    """Build and check the :class:`Trace` of ``p`` from :func:`read_fields`' result.

    ``durations``, when given, are its :attr:`Trace.iteration_seconds` worked out already (by
    the child that read the file: ``np.diff(stamps, axis=1)`` of a trace of one solve)."""
    try:
        trace = Trace(**fields)
    except TraceError as exc:
        raise TraceError(f"{p}: {exc}") from None
    except Exception as exc:
        raise TraceError(_unreadable(p, exc)) from None
    if (durations is not None and trace.solves is None
            and durations.shape == (trace.nprocs, trace.stamps.shape[1] - 1)):
        durations.setflags(write=False)
        trace.__dict__["iteration_seconds"] = durations  # the cached property, filled in
    check_finite(trace)
    return trace
