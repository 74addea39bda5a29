"""The serial writer: a trace's file image built in memory, written with plain OS calls into a
new temporary file, then published atomically.

The parallel (MPI-IO) writer lives in ``ksptrace.harness.runner.writer``; it starts from
:func:`placeholder_image`. This module imports h5py but neither mpi4py nor petsc4py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from io import BytesIO
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ksptrace.errors import OutputError
from ksptrace.trace.layout import create_layout, fill_file, write_attrs
from ksptrace.trace.model import (
    AttrValue,
    Trace,
)
from ksptrace.trace.publish import check_destination, check_space, describe_write_error, publish
from ksptrace.trace.temporaries import temp_path_for


def trace_image(trace: Trace, after_stamps: Callable[[], None] | None = None) -> memoryview:
    """The bytes of the HDF5 file of ``trace``, built in memory (as much memory as the file)."""
    buf = BytesIO()
    with h5py.File(buf, "w") as f:
        fill_file(f, trace, after_stamps)
    return buf.getbuffer()


PLACEHOLDERS: dict[str, Any] = {"f": np.nan, "i": 0, "S": b""}
"""What a dataset holds, by dtype kind, until the ranks fill in their rows."""


def placeholder_image(
    nprocs: int, nstamps: int, attrs: Mapping[str, AttrValue | None], injected: bool = False,
    waits: bool = False, events: bool = False,
) -> memoryview:
    """The bytes of a trace file with every attribute written (in its group), the coordinates
    filled and attached as dimension scales, and every dataset allocated and filled with
    placeholders (NaN, 0, empty names), built in memory.

    Ranks can then fill in their rows through MPI-IO without allocating space or changing any
    metadata (``tests/harness/test_diskfull.py`` checks both); this is why host names are
    fixed-length strings (:data:`HOSTNAME_BYTES`). Rank 0 holds this image, the
    size of the trace (16 bytes per rank and monitor call), while it writes it.
    """
    buf = BytesIO()
    with h5py.File(buf, "w") as f:
        write_attrs(f, attrs)
        for ds in create_layout(f, nprocs, nstamps, injected, waits=waits,
                                events=events).values():
            ds[...] = np.full(ds.shape, PLACEHOLDERS[ds.dtype.kind], dtype=ds.dtype)
    return buf.getbuffer()


def write_image(
    tmp: Path, image: bytes | memoryview, midway: Callable[[], None] | None = None
) -> None:
    """Write ``image`` to the new file ``tmp`` once its size is known to fit.

    Only plain OS calls touch the disk: HDF5 copes badly with a failed write (errors lost in
    destructors, a crash at exit, and with MPI-IO ranks that deadlock in the close). Any failure
    raises one OutputError and leaves no file. ``midway`` runs after half the bytes (tests).
    """
    created = False
    try:
        view = memoryview(image).cast("B")
        check_space(tmp.parent, len(view))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        created = True
        try:
            _write_all(fd, view[: len(view) // 2])
            if midway is not None:
                midway()
            _write_all(fd, view[len(view) // 2 :])
        finally:
            os.close(fd)
    except OSError as exc:
        if created:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise OutputError(describe_write_error(exc, tmp, memoryview(image).nbytes)) from None
    except BaseException:
        if created:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


def write_file(tmp: Path, trace: Trace, midway: Callable[[], None] | None = None) -> None:
    """Write ``trace`` to the new file ``tmp``: OutputError, and no file, when it cannot be."""
    write_image(tmp, trace_image(trace), midway)


def write_trace(trace: Trace, path: str | os.PathLike[str], overwrite: bool = False) -> Path:
    """Write ``trace`` to ``path`` atomically (temporary file, then rename)."""
    final = Path(path)
    check_destination(final, overwrite)
    tmp = temp_path_for(final)
    try:
        write_file(tmp, trace)
        publish(tmp, final, overwrite)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return final
