"""Output folders written whole or not at all (reports, segmentation results).

A report is written into a hidden temporary folder beside its destination and moved into place
by renames only when every file is complete, as traces are. A full disk, an unwritable folder or
a destination under a file gives one :class:`~ksptrace.errors.OutputError` line and leaves no
partial output (and an earlier report in the same place untouched).

Since the new folder replaces the old one whole, only a folder that is empty or holds an earlier
ksptrace output (its :data:`MARKER` file, or one of the files a caller names) is ever replaced:
``analyze traces/*.h5 --out traces`` is refused instead of deleting the traces.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from ksptrace.errors import OutputError, UsageError

MARKER = ".ksptrace-output"
"""Written into every staged folder: it marks a folder ksptrace may replace later."""


def _describe(exc: OSError, where: Path) -> str:
    if exc.errno == errno.ENOSPC or exc.errno == errno.EDQUOT:
        return f"no space left on the device holding {where}; free some space or pick another --out"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied writing {where}; pick a writable --out"
    if exc.errno == errno.EROFS:
        return f"{where} is on a read-only file system; pick another --out"
    if exc.errno == errno.ENOTDIR:
        return f"{where}: a parent of it is a file, not a folder; pick another --out"
    if exc.errno == errno.ENAMETOOLONG:
        return f"{where}: file name too long; pick a shorter --out"
    reason = exc.strerror or type(exc).__name__
    return f"cannot write {where}: {reason}; pick another --out"


def check_destination(out: Path, earlier: tuple[str, ...] = ()) -> None:
    """Fail before any work when ``out`` can never become a folder of results, or is a folder
    of something else (not empty, no :data:`MARKER`, none of the ``earlier`` output files)."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} exists and is not a folder; choose another --out")
    if out.is_dir():
        try:
            names = {p.name for p in out.iterdir()}
        except OSError as exc:
            raise OutputError(_describe(exc, out)) from None
        if names and MARKER not in names and not names & set(earlier):
            raise UsageError(
                f"--out {out} is a folder holding other files (not an earlier ksptrace output), "
                "which the results would replace; pick a new or empty folder"
            )
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{out}: {parent} is a file, not a folder; pick another --out")
            break


@contextlib.contextmanager
def staged_directory(
    out: str | os.PathLike[str], earlier: tuple[str, ...] = ()
) -> Iterator[Path]:
    """Yield an empty temporary folder; on normal exit it replaces ``out`` as a whole.

    Files of an earlier folder at ``out`` are replaced only when the new one is complete, and
    only when ``out`` is empty or an earlier output (see :func:`check_destination`). A symbolic
    link is followed: the folder it names is replaced and the link keeps pointing at it.
    On any error the temporary folder is removed and ``OutputError`` (for OS errors) is raised.
    """
    final = Path(out)
    if final.is_symlink():
        final = final.resolve()
    check_destination(final, earlier)
    parent = final.parent if str(final.parent) else Path(".")
    tmp = parent / f".{final.name}.tmp-{uuid.uuid4().hex[:10]}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        (tmp / MARKER).write_text("written by ksptrace; this folder is replaced whole on rewrite\n")
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(_describe(exc, final)) from None
    try:
        yield tmp
        _swap_in(tmp, final)
    except OSError as exc:
        raise OutputError(_describe(exc, final)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _swap_in(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final``; an existing ``final`` is moved aside first, then removed."""
    if not final.exists():
        os.rename(tmp, final)
        return
    old = final.parent / f".{final.name}.old-{uuid.uuid4().hex[:10]}"
    os.rename(final, old)
    try:
        os.rename(tmp, final)
    except OSError:
        os.rename(old, final)  # put the earlier results back
        raise
    shutil.rmtree(old, ignore_errors=True)
