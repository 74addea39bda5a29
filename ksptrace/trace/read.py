"""The validating reader: one trace (:func:`read_trace`), many (:func:`iter_traces`), or only
the attributes (:func:`attrs_of`); every refusal is one TraceError line naming the file. A large
file can be started early (:func:`read_ahead`) while the caller imports what it needs.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path

import h5py

from ksptrace.errors import TraceError
from ksptrace.trace import probe, reader_child
from ksptrace.trace.fields import file_attrs, read_here
from ksptrace.trace.model import (
    AttrValue,
    Trace,
)
from ksptrace.trace.shared_read import Started, abandon, finish_read, read_in_child, start_read


def attrs_of(path: str | os.PathLike[str]) -> dict[str, AttrValue]:
    """The flat attributes of the trace file ``path`` (either schema), read in a forked child
    (:mod:`ksptrace.trace.probe`); TraceError when the file is not a readable trace."""
    p = Path(path)

    def read() -> dict[str, AttrValue]:
        try:
            with h5py.File(p, "r") as f:
                return file_attrs(f)
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise TraceError(f"{p}: not a readable trace ({exc})") from None

    return probe.in_child(read, p)


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and validate one trace file; raise TraceError ``"<file>: <reason>"`` (one line).

    Both layouts are read: schema 1 (every attribute on the root) and schema 2 (attributes in
    the groups of :data:`ATTRIBUTE_GROUPS`); either gives the same flat :attr:`Trace.attrs`.
    The checks, in order: the file can be opened; ``schema_version`` is a positive integer this
    reader knows; every dataset exists with its kind, dtype and shape, and does not declare more
    data than the file can hold (all before any data are read); text is UTF-8; an attribute
    group is a group and no attribute is stored twice; node ids are 0-based indices below P;
    the timings are plausible (:meth:`Trace.timing_fault`).
    A file on which the HDF5 library itself crashes or hangs is refused too: the file is read
    once, in a forked child (:func:`read_in_child`; a small file inside
    :func:`ksptrace.trace.reader_child.reading`, by the reader child that stays).
    """
    p = Path(path)
    file_bytes = probe.regular_file(p)
    if not hasattr(os, "fork"):
        return read_here(p, file_bytes)
    started = _taken(p)
    if started is not None:
        return finish_read(started)
    reader = reader_child.reader()
    if reader is not None and file_bytes <= reader_child.SMALL_FILE:
        return reader.read(p, file_bytes)
    return read_in_child(p, file_bytes)


_AHEAD: dict[tuple[object, ...], Started] = {}
"""Reads started by :func:`read_ahead`, by the identity of their file."""


def _identity(p: Path) -> tuple[object, ...]:
    """The file ``p`` is now: its path, inode and size, and when it last changed."""
    st = os.stat(p)
    return (str(p.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _taken(p: Path) -> Started | None:
    """The read of ``p`` that :func:`read_ahead` started in this process, if the file has not
    changed since; None otherwise."""
    if not _AHEAD:
        return None
    try:
        key = _identity(p)
    except OSError:
        return None
    started = _AHEAD.get(key)
    if started is None or started.parent != os.getpid():  # a forked process: not its child
        return None
    return _AHEAD.pop(key)


def read_ahead(path: str | os.PathLike[str]) -> None:
    """Start reading a large trace file now, in its forked child (:func:`read_in_child`), so
    that the caller can import the analysis meanwhile (about a second at paper scale): the
    next :func:`read_trace` of the same, unchanged file takes the result. A small file, a
    file that cannot be read (read_trace will say why) or a second call does nothing. A read
    nobody takes is stopped when the process exits."""
    if _AHEAD or not hasattr(os, "fork"):
        return
    p = Path(path)
    try:
        file_bytes = probe.regular_file(p)
        key = _identity(p)
    except (TraceError, OSError):
        return
    if file_bytes <= reader_child.SMALL_FILE:
        return
    if not _STOP_AT_EXIT:
        atexit.register(_abandon_all)
        _STOP_AT_EXIT.append(True)
    try:
        _AHEAD[key] = start_read(p, file_bytes)
    except TraceError:
        return  # no memory to map for it: read_trace says so


_STOP_AT_EXIT: list[bool] = []


def _abandon_all() -> None:
    while _AHEAD:
        abandon(_AHEAD.popitem()[1])


def iter_traces(
    paths: Iterable[str | os.PathLike[str]],
) -> Generator[Trace | TraceError, None, None]:
    """Read traces one at a time: yield each valid Trace, or the TraceError of a bad one.

    The error's message is one line, ``"<file>: <reason>"``, so a caller can name the file once
    and go on with the rest. This is the one entry point for analyses of many traces; small
    files are read by one reader child (:func:`ksptrace.trace.reader_child.reading`).
    """
    with reader_child.reading(paths if isinstance(paths, Sequence) else ()):
        for path in paths:
            try:
                yield read_trace(path)
            except TraceError as exc:
                yield exc
