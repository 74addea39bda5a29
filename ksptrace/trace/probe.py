"""Open an untrusted HDF5 file only in a forked child, so that no byte of it can end or hang
the command that reads it.

Damaged HDF5 metadata can crash libhdf5 (a segmentation fault while iterating attributes) or
send it into an endless loop; no Python handler catches either. So every read of a file that
may come from elsewhere runs in a child (:func:`in_child`), which is killed after a time
limit, and whose crash becomes one :class:`TraceError` naming the file. Only regular files are
opened at all: a FIFO or a device named ``x.h5`` is refused before anything blocks on it.
Solver traces use :func:`ksptrace.trace.io.read_trace`, which reads the arrays straight into
shared memory; collectives traces and attribute look-ups use :func:`in_child`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import select
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ksptrace.errors import TraceError

T = TypeVar("T")

PROBE_SECONDS = 20.0
"""A forked reader gets this long, plus a second per 50 MB of file, to finish."""


def regular_file(p: Path) -> int:
    """The size of ``p``; TraceError for a missing, unreadable or non-regular file (a FIFO, a
    device, a folder), checked without opening it."""
    try:
        st = os.stat(p)
    except PermissionError:
        raise TraceError(
            f"{p}: permission denied; make the file readable (chmod +r) or copy it") from None
    except FileNotFoundError:
        raise TraceError(f"{p}: no such trace file") from None
    except OSError as exc:
        raise TraceError(f"{p}: cannot open ({exc.strerror or exc}); check the path") from None
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(f"{p}: not a regular file; give the path of a trace file (.h5)")
    if not os.access(p, os.R_OK):
        raise TraceError(
            f"{p}: permission denied; make the file readable (chmod +r) or copy it")
    return int(st.st_size)


def source_of(fd: int) -> tuple[int, ...]:
    """What names the bytes behind ``fd``: device, inode, size and the times of the last data
    and inode change (ns). A file renamed in place of another has another inode, and a write
    changes the times: equal sources read the same bytes (the analysis cache relies on it)."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def limit_for(file_bytes: int) -> float:
    return PROBE_SECONDS + file_bytes / 50e6


def wait(pid: int, limit: float) -> int | None:
    """The wait status of child ``pid``, or None (and the child killed) after ``limit`` s."""
    done, status = 0, 0
    try:
        if hasattr(os, "pidfd_open"):  # Linux: sleep until the child ends, no polling
            fd = os.pidfd_open(pid)
            try:
                select.select([fd], [], [], limit)
            finally:
                os.close(fd)
            done, status = os.waitpid(pid, os.WNOHANG)
        else:
            deadline = time.monotonic() + limit
            pause = 0.0005
            while not done and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(2 * pause, 0.05)
                done, status = os.waitpid(pid, os.WNOHANG)
    finally:
        if not done:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    return status if done else None


def fault_of(p: Path, status: int | None, limit: float) -> str | None:
    """The one-line reason a child reading ``p`` failed, from its wait status."""
    if status is None:
        return f"{p}: reading it did not finish within {limit:.0f} s (HDF5 loops on it): a " \
               "corrupt file; rerun the run that made it"
    if os.WIFSIGNALED(status):
        return f"{p}: the HDF5 library crashed reading it (signal {os.WTERMSIG(status)}): a " \
               "corrupt file; rerun the run that made it"
    return None


def _child(fn: Callable[[], Any], p: Path, w: int) -> None:
    faulthandler.disable()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # libc's own crash reports ("stack smashing detected")
    try:
        payload = pickle.dumps(("ok", fn()))
    except TraceError as exc:
        payload = pickle.dumps(("refused", str(exc)))
    except BaseException as exc:  # any fault of an untrusted file makes a bad trace
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        payload = pickle.dumps(("refused", f"{p}: unreadable ({reason}); rerun the run that "
                                           "made it"))
    view = memoryview(payload)
    while view:
        view = view[os.write(w, view):]


def in_child(fn: Callable[[], T], p: Path, limit: float | None = None) -> T:
    """``fn()`` run in a forked child (it reads ``p``), its result pickled back; a crash, a
    hang past the limit (``limit`` seconds, by default :func:`limit_for` the file's size) or a
    TraceError in the child is a TraceError here."""
    file_bytes = regular_file(p)
    if not hasattr(os, "fork"):
        return fn()
    limit = limit_for(file_bytes) if limit is None else limit
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            with contextlib.suppress(BaseException):
                _child(fn, p, w)
        finally:
            os._exit(0)
    os.close(w)
    chunks: list[bytes] = []
    deadline = time.monotonic() + limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                break
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
    status = wait(pid, max(deadline - time.monotonic(), 0.0))
    fault = fault_of(p, status, limit)
    if fault is not None:
        raise TraceError(fault)
    try:
        kind, value = pickle.loads(b"".join(chunks))
    except Exception:
        raise TraceError(f"{p}: the reader gave nothing back (out of memory?); rerun the "
                         "command") from None
    if kind == "refused":
        raise TraceError(value)
    result: T = value
    return result
