"""Where ksptrace keeps what it can recompute: a folder per user, never inside a campaign.

What is kept there and read back (the C monitor's library, the analysis cache's key, texts
sealed with that key such as ``ompi_info``'s answer: :func:`store_text`) is trusted only from a
*private* folder: this user owns it, neither group nor others can write it, and
every folder above it is owned by this user or root and is not writable by others either,
except a root-owned sticky folder such as ``/tmp`` (where no one can rename or remove another's
entry). Symbolic links on the way are accepted only when this user or root owns them. A file is
read back only when it is a regular file (never through a symlink), owned by this user and
writable by no one else.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from pathlib import Path

CACHE_ENV = "KSPTRACE_CACHE_DIR"
"""Overrides the cache folder (default ``$XDG_CACHE_HOME/ksptrace`` or ``~/.cache/ksptrace``)."""

WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH

KEY_FILE = "cache.key"
"""This user's secret key in :func:`cache_dir` (mode 0600), which authenticates cache entries."""
KEY_BYTES = 32


def cache_dir() -> Path:
    """The cache folder (not created here: a cache that cannot be written is no error)."""
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "ksptrace"


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
    """Why the open file ``fd`` may not be read back (None when it may)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by this user"
    if st.st_mode & WRITABLE_BY_OTHERS:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def open_private(path: Path) -> int:
    """A read-only descriptor of ``path``, never through a symlink (nor blocking on a FIFO);
    OSError when it cannot be opened, ValueError (with the reason) when it may not be read."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    problem = file_problem(fd)
    if problem is not None:
        os.close(fd)
        raise ValueError(f"{path} is {problem}")
    return fd


def user_key() -> bytes | str:
    """This user's secret key (:data:`KEY_FILE` in the private :func:`cache_dir`, made on
    first use), or why there is none to be had."""
    folder = cache_dir()
    problem = private_folder(folder)
    if problem is not None:
        return f"{problem}; set {CACHE_ENV} to a folder only you can write"
    path = folder / KEY_FILE
    if not path.exists():
        _make_key(path)
    try:
        fd = open_private(path)
    except (OSError, ValueError) as exc:
        return f"the key {path} cannot be used ({exc}); remove it"
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if mode & 0o077 or len(key) != KEY_BYTES:
        return f"the key {path} is damaged or readable by others (mode {mode:o}); remove it"
    return key


def _make_key(path: Path) -> None:
    """Write a new key whole under a private name, then link it into place (a key another
    process made meanwhile wins)."""
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            os.write(fd, os.urandom(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


TEXT_MAGIC = b"ksptrace sealed text 1\n"
MAX_TEXT_BYTES = 4 << 20
"""The largest text kept sealed (ompi_info's whole tuned listing takes about 60 KB)."""


def _text_seal(key: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(key, b"text\0" + name.encode() + b"\0" + payload, hashlib.sha256).digest()


def load_text(name: str) -> str | None:
    """The text kept under ``name`` in the private :func:`cache_dir` by :func:`store_text`, or
    None: a missing entry, a folder that is not private, and an entry this user's key did not
    seal (planted, copied or edited) all read as none."""
    folder = cache_dir()
    key = user_key()  # None unless the folder is private
    if isinstance(key, str):
        return None
    try:
        fd = open_private(folder / name)
    except (OSError, ValueError):
        return None
    try:
        data = os.read(fd, MAX_TEXT_BYTES + len(TEXT_MAGIC) + 33)
    except OSError:
        return None
    finally:
        os.close(fd)
    head = len(TEXT_MAGIC) + 32
    payload = data[head:]
    if (not data.startswith(TEXT_MAGIC) or len(payload) > MAX_TEXT_BYTES
            or not hmac.compare_digest(data[len(TEXT_MAGIC):head],
                                       _text_seal(key, name, payload))):
        return None
    try:
        return payload.decode()
    except UnicodeDecodeError:
        return None


def store_text(name: str, text: str) -> None:
    """Keep ``text`` under ``name`` in the private :func:`cache_dir`, sealed with this user's
    key, written whole (mode 0600) or not at all; nothing is kept where the folder is not
    private or the text is too long, and a write that fails is no error."""
    payload = text.encode()
    key = user_key()
    if isinstance(key, str) or len(payload) > MAX_TEXT_BYTES:
        return
    folder = cache_dir()
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(TEXT_MAGIC + _text_seal(key, name, payload) + payload)
        os.replace(tmp, folder / name)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)
