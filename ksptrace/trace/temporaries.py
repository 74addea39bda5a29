"""Temporary trace files: named after their writer, and swept when that writer is dead.

A trace is written to a hidden ``.<name>.tmp-<token>`` beside its final name and published by
rename, so a reader never sees half a trace. A writer killed mid-write (SIGKILL, the OOM killer,
a node lost) leaves its temporary file behind. The token names the writing process and where it
ran (a digest of host name, boot and PID namespace, so a PID is only ever checked where it
means that process), with a random part, so the next ``ksptrace run`` or ``campaign status``
in that folder can tell a dead writer's leftovers from a live writer's file and remove only
the former.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

TEMP_MARK = ".tmp-"
ORPHAN_AGE_SECONDS = 7 * 24 * 3600.0
"""A temporary file whose writer cannot be identified (an older ksptrace's name, another host)
is removed once it has not changed for this long: no write of a trace takes a week."""
_TOKEN = re.compile(r"^(?P<rand>[0-9a-f]{6,16})-p(?P<pid>\d{1,10})-w(?P<where>[0-9a-f]{10})$")


@dataclass(frozen=True)
class Writer:
    """The process a temporary file's name says wrote it."""

    pid: int
    where: str
    """Digest of host, boot and PID namespace (:func:`here`)."""


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(64).decode("ascii", "replace").strip()
    except OSError:
        return ""


@functools.cache
def here() -> str:
    """Where a PID names one process: this host, this boot, this PID namespace (10 hex)."""
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    text = "\0".join((socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), namespace))
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:10]


def new_token(random_part: str | None = None, pid: int | None = None) -> str:
    """A token naming the writer (``pid`` here, :func:`here`) and a random part (29 characters
    at most, so a bounded trace name and its token fit in 255 bytes)."""
    rand = (random_part or uuid.uuid4().hex)[:8]
    return f"{rand}-p{os.getpid() if pid is None else pid}-w{here()}"


def temp_path_for(final: Path, token: str | None = None) -> Path:
    """A hidden temporary name next to ``final`` (same file system, so rename is atomic)."""
    return final.with_name(f".{final.name}{TEMP_MARK}{token or new_token()}")


def writer_of(path: Path) -> Writer | None:
    """The writer a temporary file's name records (None: no such name)."""
    name = path.name
    if not name.startswith(".") or TEMP_MARK not in name:
        return None
    found = _TOKEN.match(name.rsplit(TEMP_MARK, 1)[1])
    if found is None:
        return None
    return Writer(int(found["pid"]), found["where"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    except OverflowError:
        return False
    return True


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether the temporary file ``path`` belongs to a writer that is certainly gone: a
    process here that no longer exists, or (writer unknown or elsewhere) untouched for a week."""
    writer = writer_of(path)
    if writer is not None and writer.where == here():
        return not _alive(writer.pid)
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except OSError:
        return False
    return age > ORPHAN_AGE_SECONDS


def sweep(folder: Path, pattern: str = "*.h5") -> list[Path]:
    """Remove the stale temporary files of ``pattern`` files in ``folder`` (regular files
    only; links and folders are left alone); returns what was removed."""
    removed: list[Path] = []
    try:
        candidates = list(folder.glob(f".{pattern}{TEMP_MARK}*"))
    except OSError:
        return removed
    for path in candidates:
        try:
            if path.is_symlink() or not path.is_file() or not is_stale(path):
                continue
            path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed
