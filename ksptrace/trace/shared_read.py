"""Reading a trace in a forked child that hands the arrays back through shared memory.

Damaged HDF5 metadata can crash libhdf5 or send it into an endless loop; only the child
touches the file, and the parent's arrays are views of the shared map (the data are read once
and never copied).
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import mmap
import os
import pickle
import signal
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.errors import TraceError
from ksptrace.trace import probe
from ksptrace.trace.fields import make_trace, read_fields
from ksptrace.trace.model import (
    Trace,
)

_HEADER = struct.Struct("<QQQ")
"""The shared map's header: status, offset and length of the pickled result."""


_OK, _REFUSED, _RETRY = 1, 2, 3
"""The child's outcomes: the trace is in the map; refused (the reason is); the map was too
small (the header's offset says how large one must be)."""

_FALLBACK_MAP = 256 << 20
"""The first map when one sized from the file cannot be had (a huge sparse file)."""


_ALIGN = 64


def read_in_child(p: Path, file_bytes: int) -> Trace:
    """Read ``p`` in a forked child and hand the trace back through shared memory.

    Damaged HDF5 metadata can crash libhdf5 (a segmentation fault while iterating attributes)
    or send it into an endless loop, both found by ``tests/trace/test_read_fuzz.py``; no Python
    handler catches either, and one such file would end or hang a whole analysis. So only a
    child touches the file, and it is killed after :data:`probe.PROBE_SECONDS` (plus a second per
    50 MB). The child reads each dataset straight into an anonymous shared map and pickles the
    trace's fields (protocol 5) with the arrays out of band, as spans of that map; the parent's
    arrays are views of the map. So the data are read once and never copied, and a trace costs
    its size in memory once, not twice. A trace the map cannot hold (it is sized from the file,
    and a compressed trace may hold more) is read once more by a second child, into a map of
    the size the first one found it needs; the parent itself never reads the file.
    """
    return finish_read(start_read(p, file_bytes))


@dataclasses.dataclass(frozen=True)
class Started:
    """A read under way in a forked child (:func:`start_read`); :func:`finish_read` waits."""

    path: Path
    file_bytes: int
    shared: mmap.mmap
    pid: int
    """The child reading the file."""
    parent: int
    """The process that forked it: the only one that can wait for it."""
    retried: bool = False
    """Whether this is the second child, in a map sized by the first."""


def start_read(p: Path, file_bytes: int, map_bytes: int | None = None) -> Started:
    """Fork the child that reads ``p`` into a shared map (of ``map_bytes``, by default sized
    from the file), and return at once."""
    shared = _shared_map(p, map_bytes, file_bytes)
    pid = os.fork()
    if pid == 0:  # the child: read, then leave without exit handlers or crash reports
        try:
            faulthandler.disable()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)  # libc's own crash reports ("stack smashing detected")
            with contextlib.suppress(BaseException):
                _hand_over(shared, p, file_bytes)
        finally:
            os._exit(0)
    return Started(p, file_bytes, shared, pid, os.getpid())


def finish_read(started: Started) -> Trace:
    """Wait for the child of :func:`start_read` (killing it after the limit) and build the
    trace on views of the shared map; TraceError for a file the child could not read."""
    p, file_bytes, shared = started.path, started.file_bytes, started.shared
    limit = probe.limit_for(file_bytes)
    fault = probe.fault_of(p, probe.wait(started.pid, limit), limit)
    if fault is not None:
        raise TraceError(fault)
    state, offset, length = _HEADER.unpack_from(shared, 0)
    if state == _REFUSED:  # the message the child wrote: a pickled str, from this process
        raise TraceError(pickle.loads(shared[offset:offset + length]))
    if state == _RETRY and not started.retried:  # a second child, with a map large enough
        again = start_read(p, file_bytes, offset)
        return finish_read(dataclasses.replace(again, retried=True))
    if state != _OK:  # never read a foreign file here: refuse it with the reason
        raise TraceError(f"{p}: the reader gave nothing back (out of memory, or the file "
                         "changed while it was read); rerun the command")
    fields, spans = pickle.loads(shared[offset:offset + length])
    view = memoryview(shared).toreadonly()  # nothing else can write the map: Trace keeps it
    buffers = [view[start:start + size] for start, size in spans]
    values, durations = pickle.loads(fields, buffers=buffers)
    return make_trace(p, values, durations)


def abandon(started: Started) -> None:
    """Stop a read nobody will finish: kill its child and reap it (its parent only)."""
    if started.parent != os.getpid():
        return
    with contextlib.suppress(ProcessLookupError, ChildProcessError):
        os.kill(started.pid, signal.SIGKILL)
        os.waitpid(started.pid, 0)


class _Carver:
    """Hands out aligned arrays from ``shared``, after its header, in the order asked; once the
    map is full, arrays of private memory, while :attr:`end` goes on counting the map's size
    that would have held everything."""

    def __init__(self, shared: mmap.mmap) -> None:
        self.shared = shared
        self.end = _ALIGN
        self.full = False
        self.base = np.frombuffer(shared, np.uint8).ctypes.data

    def take(self, nbytes: int) -> int | None:
        """Where ``nbytes`` go in the map; None once it is full."""
        start = self.end
        self.end = start + -(-nbytes // _ALIGN) * _ALIGN
        self.full = self.full or start + nbytes > len(self.shared)
        return None if self.full else start

    def array(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        count = int(np.prod(shape, dtype=np.int64))
        start = self.take(count * dtype.itemsize)
        if start is None:
            return np.empty(shape, dtype=dtype)
        return np.ndarray(shape, dtype=dtype, buffer=self.shared, offset=start)

    def span(self, raw: memoryview) -> tuple[int, int]:
        """Where ``raw`` lies in the map; a buffer from elsewhere is copied in first."""
        if raw.nbytes:
            start = np.frombuffer(raw, np.uint8).ctypes.data - self.base
            if start >= 0 and start + raw.nbytes <= len(self.shared):
                return start, raw.nbytes
        at = self.take(raw.nbytes)
        if at is not None:
            self.shared[at:at + raw.nbytes] = raw
        return (at or 0), raw.nbytes


def _map_bytes(file_bytes: int) -> int:
    """The shared map's size: room for the data of an uncompressed trace and its pickle.

    Only the pages the child writes cost memory; a compressed trace may not fit, and is then
    read again into a map of the size the child found it needs.
    """
    return 2 * file_bytes + (16 << 20)


def _shared_map(p: Path, map_bytes: int | None, file_bytes: int) -> mmap.mmap:
    """An anonymous shared map (ours and the child's); a smaller one first when the size from
    the file cannot be had (a huge sparse file: the child says what it really needs)."""
    sizes = [map_bytes] if map_bytes is not None else [_map_bytes(file_bytes), _FALLBACK_MAP]
    for size in sizes:
        try:
            return mmap.mmap(-1, size)
        except (OSError, OverflowError, ValueError):
            continue
    raise TraceError(f"{p}: reading it needs {sizes[0] / 2**30:.1f} GiB of memory, more than "
                     "this machine gives; read it on a larger machine")


def _hand_over(shared: mmap.mmap, p: Path, file_bytes: int) -> None:
    """In the child: read ``p`` into ``shared`` and write the outcome (see :data:`_HEADER`).

    The child hands over the fields of the trace, not a :class:`Trace`: building one copies
    writable arrays, and the parent builds it (and runs its checks) on read-only views.
    """
    carver = _Carver(shared)
    try:
        values = read_fields(p, file_bytes, carver.array)
        durations = _durations(values, carver)
        buffers: list[pickle.PickleBuffer] = []
        fields = pickle.dumps((values, durations), protocol=5, buffer_callback=buffers.append)
        spans = [carver.span(buffer.raw()) for buffer in buffers]
        result = pickle.dumps((fields, spans))
    except TraceError as exc:
        _refuse(shared, str(exc))
        return
    except Exception as exc:  # any fault of an untrusted file makes a bad trace
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        _refuse(shared, f"{p}: unreadable ({reason or type(exc).__name__}); rerun the run "
                        "that made it")
        return
    end = carver.take(len(result))
    if end is None:
        _HEADER.pack_into(shared, 0, _RETRY, carver.end + (1 << 20), 0)
        return
    shared[end:end + len(result)] = result
    _HEADER.pack_into(shared, 0, _OK, end, len(result))


def _refuse(shared: mmap.mmap, reason: str) -> None:
    message = pickle.dumps(reason)
    shared[_ALIGN:_ALIGN + len(message)] = message
    _HEADER.pack_into(shared, 0, _REFUSED, _ALIGN, len(message))


def _durations(values: dict[str, Any], carver: _Carver) -> np.ndarray | None:
    """In the child: the iteration times ``np.diff(stamps, axis=1)`` (the same subtraction, so
    the same bits) in the shared map, while the parent may still be importing: a parent would
    spend 0.5 s at paper scale on the first touch of a new 330 MB array. None for a trace of
    several solves (the parent drops the gaps between them) or float32 stamps."""
    stamps = values.get("stamps")
    if (values.get("solves") is not None or not isinstance(stamps, np.ndarray)
            or stamps.dtype != np.float64 or stamps.ndim != 2 or stamps.shape[1] < 2):
        return None
    out = carver.array((stamps.shape[0], stamps.shape[1] - 1), np.dtype(np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(stamps[:, 1:], stamps[:, :-1], out=out)
    return out
