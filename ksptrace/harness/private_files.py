"""Folders and files that only this user can have written: where a compiled library may be
loaded from.

A library is code: loading one that another user could have placed or swapped runs their code
as this user. A folder is *private* when this user owns it, neither group nor others can write
it, and every folder above it is owned by this user or root and is not writable by others
either, except a root-owned sticky folder such as ``/tmp`` (where no one can rename or remove
another's entry). Symbolic links on the way are accepted only when this user or root owns them.
A file is loaded only when it is a regular file (never through a symlink), owned by this user,
writable by no one else, and its content has the digest recorded when it was built.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def _prefixes(path: Path) -> list[Path]:
    parts = path.parts
    return [Path(*parts[:i]) for i in range(1, len(parts) + 1)]


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` is not private (None when it is), checked on the path as given and on
    the path its links resolve to."""
    uid = os.geteuid()
    target = Path(os.path.abspath(folder))
    real = Path(os.path.realpath(target))
    for chain in (_prefixes(target), _prefixes(real)):
        for p in chain:
            try:
                st = os.lstat(p)
            except OSError as exc:
                return f"{p}: {exc.strerror or exc}"
            last = p == chain[-1]
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid not in (uid, 0):
                    return f"{p} is a symbolic link owned by uid {st.st_uid}"
                continue
            if not stat.S_ISDIR(st.st_mode):
                return f"{p} is not a folder"
            if st.st_uid not in (uid, 0) or (last and st.st_uid != uid):
                return f"{p} is owned by uid {st.st_uid}, not by this user (uid {uid})"
            shared = bool(st.st_mode & WRITABLE_BY_OTHERS)
            sticky_root = bool(st.st_mode & stat.S_ISVTX) and st.st_uid == 0
            if shared and (last or not sticky_root):
                return f"{p} can be written by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def private_folder(folder: Path) -> str | None:
    """Make ``folder`` (mode 0700) if it is missing; why it is not private, or None."""
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder_problem(folder)


def file_problem(fd: int) -> str | None:
    """Why the open file ``fd`` may not be loaded (None when it may)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by this user"
    if st.st_mode & WRITABLE_BY_OTHERS:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def open_private(path: Path) -> int:
    """A read-only descriptor of ``path``, never through a symlink; OSError when it cannot be
    opened, ValueError (with the reason) when it may not be loaded."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    problem = file_problem(fd)
    if problem is not None:
        os.close(fd)
        raise ValueError(f"{path} is {problem}")
    return fd


def digest_of(fd: int) -> str:
    """The SHA-256 of the whole file behind ``fd`` (read from its start)."""
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()
