"""The validating reader: one trace (:func:`read_trace`), many (:func:`iter_traces`), or only
the attributes (:func:`attrs_of`); every refusal is one TraceError line naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
from pathlib import Path

import h5py

from ksptrace.errors import TraceError
from ksptrace.trace import probe, reader_child
from ksptrace.trace.fields import file_attrs, read_here
from ksptrace.trace.model import (
    AttrValue,
    Trace,
)
from ksptrace.trace.shared_read import read_in_child


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
    reader = reader_child.reader()
    if reader is not None and file_bytes <= reader_child.SMALL_FILE:
        return reader.read(p, file_bytes)
    return read_in_child(p, file_bytes)


def iter_traces(
    paths: Iterable[str | os.PathLike[str]],
) -> Generator[Trace | TraceError, None, None]:
    """Read traces one at a time: yield each valid Trace, or the TraceError of a bad one.

    The error's message is one line, ``"<file>: <reason>"``, so a caller can name the file once
    and go on with the rest. This is the one entry point for analyses of many traces; small
    files are read by one reader child (:func:`ksptrace.trace.reader_child.reading`).
    """
    with reader_child.reading():
        for path in paths:
            try:
                yield read_trace(path)
            except TraceError as exc:
                yield exc
