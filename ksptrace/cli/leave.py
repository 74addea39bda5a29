"""Leaving the process without the interpreter's teardown, when nothing needs it.

Once a command has returned, its files are written and closed and its children waited for;
what is left of the exit is the interpreter taking itself apart: every module of scipy,
pandas and h5py cleared and every object freed, 0.09-0.14 s after a demo analysis (a thirtieth
of it). :func:`leave` flushes the standard streams, runs the ``atexit`` functions as the
interpreter would, then ends the process with ``os._exit`` (mypy leaves the same way). It keeps
the ordinary exit when the teardown may matter: a thread other than the main one is alive (the
interpreter would wait for it), MPI or PETSc is loaded (they finalize in the teardown, after
the ``atexit`` functions), a profiler or tracer is set (``python -m cProfile`` and ``trace`` write
their results after the command returns, debuggers watch the exit), or a standard stream cannot
be flushed (the ordinary exit reports it).

:func:`finish` runs a command and leaves with its code. Standard output that is closed
(``>&-``) or cannot take the output (``>/dev/full``, a full disk) ends it with one line on
standard error and exit code 8 (OutputError's), not a traceback; a closed one is refused before
the command starts, since a file it opened could otherwise take descriptor 1.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from ksptrace.errors import OutputError

NEEDS_TEARDOWN = ("mpi4py", "petsc4py")
"""Modules whose finalization (MPI_Finalize, PetscFinalize) runs in the interpreter's teardown."""


def teardown_needed() -> bool:
    """Whether this process must leave by the ordinary exit."""
    return (threading.active_count() > 1 or any(m in sys.modules for m in NEEDS_TEARDOWN)
            or sys.getprofile() is not None or sys.gettrace() is not None)


def leave(code: int) -> NoReturn:
    """Exit with ``code``: quickly when :func:`teardown_needed` says it may, else as usual."""
    if not teardown_needed():
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:  # None: the descriptor was closed when we started
                    stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: the ordinary exit says so
            sys.exit(code)
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


class StdoutRefused(OSError):
    """A write to standard output failed (a full disk, /dev/full, a closed descriptor)."""


class _Descriptor(io.RawIOBase):
    """Descriptor 1 as the raw layer of ``sys.stdout``: a failed write says that it was
    standard output's (a broken pipe stays a BrokenPipeError)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: Any) -> int | None:
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return None  # a non-blocking descriptor that is full: the buffer says so, as ever
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutRefused(exc.errno, exc.strerror) from None


def _watch_stdout() -> None:
    """Put :class:`_Descriptor` under ``sys.stdout``, keeping its encoding and buffering."""
    old = sys.stdout
    try:
        fd = old.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a descriptor (replaced by the caller): leave it be
    old.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Descriptor(fd)), encoding=old.encoding,
                                  errors=old.errors, line_buffering=bool(old.line_buffering))


def finish(command: Callable[[], int]) -> NoReturn:
    """Run ``command`` (a CLI's main) and leave with its exit code, saying in one line when
    standard output is closed or refused what the command wrote."""
    if sys.stdout is None:
        _error("standard output is closed (>&-); send it to a file or to /dev/null")
        leave(OutputError.exit_code)
    try:
        _watch_stdout()
        try:
            code = command()
        except SystemExit:  # argparse's --help, --version and usage lines: exit once written
            sys.stdout.flush()
            raise
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as a shell tool
        _quiet_stdout()
        leave(141)  # 128 + SIGPIPE
    except StdoutRefused as exc:
        _quiet_stdout()
        _error(f"cannot write to standard output ({exc.strerror or exc}); the output is lost: "
               "send it to a file on a disk with room, or to a pipe")
        leave(OutputError.exit_code)
    leave(code)


def _quiet_stdout() -> None:
    """Point descriptor 1 at /dev/null, so that the exit's flush of what is pending succeeds."""
    with contextlib.suppress(OSError, ValueError):  # no descriptor: the exit's flush says so
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _error(message: str) -> None:
    if sys.stderr is not None:  # standard error may refuse too: then the exit code says it
        with contextlib.suppress(OSError, ValueError):
            print(f"ksptrace: error: {message}", file=sys.stderr, flush=True)
