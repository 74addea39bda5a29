"""Putting a finished file in place: the destination check, the space check before writing,
one-line messages for failed writes, and the atomic publish (hard link or rename).

Shared by the serial writer (:mod:`ksptrace.trace.write`) and the MPI-IO writer
(``ksptrace.harness.runner.writer``).
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from ksptrace.errors import OutputError, UsageError


def check_destination(path: Path, overwrite: bool) -> None:
    """Fail early, before any work, if ``path`` cannot be written."""
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"output folder {parent} does not exist; create it or write the trace "
                         "elsewhere")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"output folder {parent} is not writable; write the trace elsewhere")
    if path.exists() and not overwrite:
        raise UsageError(f"{path} already exists; pass --overwrite to replace it")


def publish(tmp: Path, final: Path, overwrite: bool) -> None:
    """Move a complete temporary file to its final name in one atomic step.

    Without ``overwrite`` a hard link is used, which fails instead of clobbering a file that
    appeared meanwhile. Any other failure is one OutputError; the temporary file never stays.
    """
    try:
        _move(tmp, final, overwrite)
    except OSError as exc:
        raise OutputError(describe_write_error(exc, final, 0)) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _move(tmp: Path, final: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, final)
        return
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise UsageError(f"{final} already exists; pass --overwrite to replace it") from None
    except OSError:
        # File systems without hard links: fall back to a checked rename.
        if final.exists():
            raise UsageError(f"{final} already exists; pass --overwrite to replace it") from None
        os.replace(tmp, final)


def _kib(nbytes: int) -> int:
    return -(-nbytes // 1024)


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding ``folder``."""
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def check_space(folder: Path, needed: int) -> None:
    """Raise OutputError, before anything is written, when ``folder`` lacks ``needed`` bytes.

    The need is rounded up to whole blocks, as the file system allocates them.
    """
    st = os.statvfs(folder)
    block = st.f_frsize or 4096
    free = st.f_bavail * block
    if -(-needed // block) * block > free:
        raise OutputError(_no_space(folder, needed, free))


def _no_space(folder: Path, needed: int, free: int) -> str:
    room = f"needs {_kib(needed)} KiB, " if needed > free else ""
    return (
        f"no space left on {folder} for the trace ({room}{_kib(free)} KiB free); "
        "free some space or pick another --out"
    )


def describe_write_error(exc: BaseException, tmp: Path, needed: int) -> str:
    """One line for a failed write of the ``needed`` bytes of ``tmp``, saying what to do."""
    folder = tmp.parent
    text = str(exc)
    code = getattr(exc, "errno", None)
    if code == errno.EDQUOT or "quota exceeded" in text:
        return (
            f"disk quota exceeded in {folder} for the trace (needs {_kib(needed)} KiB); "
            "free some space or pick another --out"
        )
    if code == errno.ENOSPC or "No space left" in text:
        try:
            free = free_bytes(folder)
        except OSError:
            free = 0
        return _no_space(folder, needed, free)
    if code in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return f"permission denied writing the trace in {folder}; pick a writable --out"
    if code == errno.EROFS or "Read-only file system" in text:
        return f"{folder} is on a read-only file system; pick another --out"
    reason = text.splitlines()[0] if text else type(exc).__name__
    return f"cannot write the trace in {folder}: {reason}; pick another --out"
