"""One forked reader child for many small trace files, instead of one fork per file.

:func:`ksptrace.trace.shared_read.read_in_child` forks a child for every file. Forking a process
that holds scipy, matplotlib and pandas costs about 10 ms, and the child's first read another
5 ms of copy-on-write faults: 15-20 ms for a demo-size trace that reads in 2 ms, a tenth of its
whole analysis (issue 35). Inside :func:`reading`, small files are read instead by one child
that stays: it is forked at the first read, reads each file it is sent, and answers with the
trace's fields. The isolation is the same:

* a crash of the HDF5 library ends the child; the file it was reading is refused with the
  signal, as before, and the next file gets a new child;
* a read that does not finish within :func:`probe.limit_for` is killed, by the parent and by
  the child's own alarm (which also ends it if the parent is gone);
* the child ignores SIGINT (Ctrl-C is the parent's to handle) and leaves when its request pipe
  closes, so it never outlives the process it reads for.

Large files (above :data:`SMALL_FILE`) keep their own child and the shared map, which avoids a
copy of their data.
"""

from __future__ import annotations

import contextlib
import faulthandler
import math
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ksptrace.errors import TraceError
from ksptrace.trace import probe
from ksptrace.trace.fields import make_trace, read_fields
from ksptrace.trace.model import Trace

SMALL_FILE = 8 << 20
"""Files up to this size go to the reader child; larger ones to a child of their own."""
_LENGTH = struct.Struct("<Q")
_active: dict[int, _Reader] = {}
"""The reader of this process (by pid: a forked process never uses its parent's)."""


class _Reader:
    """The parent's end of one reader child (forked at the first read)."""

    def __init__(self) -> None:
        self.pid = 0
        self.requests = self.replies = -1

    def _start(self) -> None:
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(request_w)
                os.close(reply_r)
                with contextlib.suppress(BaseException):
                    _serve(request_r, reply_w)
            finally:
                os._exit(0)
        os.close(request_r)
        os.close(reply_w)
        self.pid, self.requests, self.replies = pid, request_w, reply_r

    def close(self) -> None:
        """Close the pipes; the child leaves on its own (or is killed after a second)."""
        if not self.pid:
            return
        os.close(self.requests)
        os.close(self.replies)
        probe.wait(self.pid, 1.0)
        self.pid = 0

    def read(self, p: Path, file_bytes: int) -> Trace:
        if not self.pid:
            self._start()
        limit = probe.limit_for(file_bytes)
        deadline = time.monotonic() + limit
        try:
            _send(self.requests, pickle.dumps((str(p), file_bytes, limit)))
            reply = _receive(self.replies, deadline)
        except OSError:  # the child is gone (EPIPE)
            reply = None
        if reply is None:  # it crashed or hung on this file: the file is refused
            hung = time.monotonic() >= deadline
            os.close(self.requests)
            os.close(self.replies)
            status = probe.wait(self.pid, 0.0 if hung else limit)  # a hung child is killed
            self.pid = 0
            fault = probe.fault_of(p, status, limit)
            raise TraceError(fault or f"{p}: the reader gave nothing back (out of memory?); "
                                      "rerun the command")
        kind, value = pickle.loads(reply)
        if kind == "refused":
            raise TraceError(value)
        if kind == "again":  # an unexpected fault: the one-file path decides
            from ksptrace.trace.shared_read import read_in_child

            return read_in_child(p, file_bytes)
        return make_trace(p, value)


def _send(fd: int, payload: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int, deadline: float) -> bytes | None:
    """One length-prefixed message, or None at end of file or past ``deadline``."""
    data = bytearray()
    need = _LENGTH.size
    length = None
    while len(data) < need:
        left = None if deadline == math.inf else deadline - time.monotonic()
        if (left is not None and left <= 0) or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, max(need - len(data), 1 << 16))
        if not chunk:
            return None
        data += chunk
        if length is None and len(data) >= _LENGTH.size:
            length = _LENGTH.unpack_from(data)[0]
            need = _LENGTH.size + length
    return bytes(data[_LENGTH.size:need])


def _serve(requests: int, replies: int) -> None:
    """The child: read each requested file and answer, until the request pipe closes."""
    faulthandler.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the alarm ends the child, whatever the
    # parent had installed (pytest-timeout's handler, for one)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # libc's own crash reports ("stack smashing detected")
    while True:
        request = _receive(requests, math.inf)
        if request is None:
            return
        path, file_bytes, limit = pickle.loads(request)
        signal.alarm(math.ceil(limit) + 1)  # a hang ends the child even without its parent
        try:
            answer: tuple[str, Any] = ("ok", read_fields(Path(path), file_bytes))
        except TraceError as exc:
            answer = ("refused", str(exc))
        except Exception:
            answer = ("again", None)
        signal.alarm(0)
        _send(replies, pickle.dumps(answer, protocol=5))


def reader() -> _Reader | None:
    """This process's reader child, inside :func:`reading`; None outside."""
    return _active.get(os.getpid())


@contextlib.contextmanager
def reading() -> Iterator[None]:
    """Read small trace files through one reader child until the block ends (nested blocks
    share it)."""
    pid = os.getpid()
    if pid in _active or not hasattr(os, "fork"):
        yield
        return
    _active[pid] = _Reader()
    try:
        yield
    finally:
        _active.pop(pid).close()


def keep_reading() -> None:
    """A reader child for the rest of this process (a pool worker's initializer), closed and
    waited for as the worker exits (multiprocessing's exit finalizers); if the worker is
    killed instead, the child leaves as its request pipe closes."""
    from multiprocessing import util

    if os.getpid() not in _active:
        reader = _active[os.getpid()] = _Reader()
        util.Finalize(reader, reader.close, exitpriority=10)
