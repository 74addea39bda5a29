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

When the block knows which files it will read (``reading(expected)``), the child is asked for
the next small file as soon as the current one is answered, so it reads it while the parent
analyses (3 ms of a demo trace's 100). The reply waits in the pipe; a file that changed since it
was asked for, or a plan the caller leaves, is read again and the stale reply discarded. A crash
or hang on a file read ahead refuses that file when its turn comes, as before.
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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
        self.plan: list[str] = []
        """Files that will be read in this order (:func:`reading`'s ``expected``)."""
        self.cursor = 0
        """Where in :attr:`plan` the next file is looked for."""
        self.asked: _Asked | None = None
        """The file the child was asked to read before anyone wanted it."""
        self.deadline = 0.0

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
        self.plan, self.cursor, self.asked = [], 0, None
        if not self.pid:
            return
        os.close(self.requests)
        os.close(self.replies)
        probe.wait(self.pid, 1.0)
        self.pid = 0

    def read(self, p: Path, file_bytes: int) -> Trace:
        asked, self.asked = self.asked, None
        if asked is not None and asked.key != _identity(p):
            self._drop(asked)  # another file, or this one changed since: ask again
            asked = None
        limit = probe.limit_for(file_bytes)
        self.deadline = time.monotonic() + limit  # from now, even for a read asked ahead
        sent = asked is not None or self._ask(p, file_bytes)
        reply = self._answer() if sent else None
        if reply is None:  # it crashed or hung on this file: the file is refused
            raise TraceError(self._fault(p, limit))
        self._ask_next(p)
        kind, value = pickle.loads(reply)
        if kind == "refused":
            raise TraceError(value)
        if kind == "again":  # an unexpected fault: the one-file path decides
            from ksptrace.trace.shared_read import read_in_child

            return read_in_child(p, file_bytes)
        return make_trace(p, value)

    def _ask(self, p: Path, file_bytes: int) -> bool:
        """Send the child a request to read ``p``; False if the child is gone (EPIPE)."""
        if not self.pid:
            self._start()
        try:
            _send(self.requests, pickle.dumps((str(p), file_bytes, probe.limit_for(file_bytes))))
        except OSError:
            return False
        return True

    def _answer(self) -> bytes | None:
        """The reply to the oldest request, or None if the child ended or :attr:`deadline`
        passed (the child also ends itself a second after its own limit for the read)."""
        try:
            return _receive(self.replies, self.deadline)
        except OSError:
            return None

    def _fault(self, p: Path, limit: float) -> str:
        """Why the child gave nothing back for ``p``; the next read starts a new child."""
        hung = time.monotonic() >= self.deadline
        os.close(self.requests)
        os.close(self.replies)
        status = probe.wait(self.pid, 0.0 if hung else limit)  # a hung child is killed
        self.pid, self.asked = 0, None
        if status is not None and os.WIFSIGNALED(status) and \
                os.WTERMSIG(status) == signal.SIGALRM:
            status = None  # it ended itself on a hang: say so
        fault = probe.fault_of(p, status, limit)
        return fault or f"{p}: the reader gave nothing back (out of memory?); rerun the command"

    def _ask_next(self, p: Path) -> None:
        """Ask the child now for the small file planned after ``p``, so that it reads it while
        this process analyses ``p`` (one file ahead: the reply waits in the pipe)."""
        if not self.pid:
            return
        try:  # from the last file read on: in-order reads find it at once
            at = self.plan.index(str(p), self.cursor)
        except ValueError:
            return
        self.cursor = at + 1
        for name in self.plan[at + 1:at + 2]:
            try:
                file_bytes = probe.regular_file(Path(name))
                key = _identity(Path(name))
            except (TraceError, OSError):
                return  # read_trace names the problem when the file's turn comes
            if file_bytes <= SMALL_FILE and self._ask(Path(name), file_bytes):
                self.asked = _Asked(key, file_bytes)

    def _drop(self, asked: _Asked) -> None:
        """Read and discard the reply to a request nobody wants any more (a child that gives
        none is ended: the next read starts another)."""
        self.deadline = time.monotonic() + probe.limit_for(asked.file_bytes)
        if self._answer() is None:
            self._fault(Path(str(asked.key[0])), 0.0)


@dataclass(frozen=True)
class _Asked:
    """A read requested ahead: which file (as :func:`_identity` saw it), and its size."""

    key: tuple[object, ...]
    file_bytes: int


def _identity(p: Path) -> tuple[object, ...]:
    """The file ``p`` is now: its path, inode and size, and when it last changed."""
    try:
        st = os.stat(p)
    except OSError:
        return (str(p),)
    return (str(p), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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
def reading(expected: Sequence[str | os.PathLike[str]] = ()) -> Iterator[None]:
    """Read small trace files through one reader child until the block ends (nested blocks
    share it). ``expected``: the files the block will read, in that order; the child reads
    each one while the block works on the one before (a nested block's list is ignored)."""
    pid = os.getpid()
    if pid in _active or not hasattr(os, "fork"):
        yield
        return
    _active[pid] = _Reader()
    _active[pid].plan = [str(Path(p)) for p in expected]
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
