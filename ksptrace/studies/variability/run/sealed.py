"""The analysis cache on disk: one entry per trace, named by content, sealed with this user's key.

An entry holds a pickled result, and unpickling runs whatever code the bytes name; so an entry
is read back only when nobody else can have written it:

* the cache folder must be private (:func:`ksptrace.cachedir.folder_problem`: owned by this
  user, writable by no one else, and so every folder above it but a root-owned sticky one such
  as ``/tmp``); a cache elsewhere is not used at all;
* an entry is a regular file of this user that no one else can write, opened without following
  a link, and written mode 0600;
* its first bytes are an HMAC-SHA256 of its name and content under this user's secret key
  (:func:`ksptrace.cachedir.user_key`, mode 0600 in the private ``~/.cache/ksptrace``): a
  copied, planted or damaged entry fails the check and is analysed again, never unpickled.

A trace's name in the cache is a hash of its bytes, worked out only for a regular file (a FIFO
or a device named ``x.h5`` is never opened for reading) and only up to the size it had when
probed; the holes of a sparse file are skipped, not read. Results are stored under that name
only when the trace was read from the very file hashed, unchanged (:func:`fingerprint`): a
trace renamed over the hashed one, or written to, between the hash and the read, leaves no
entry (issue 66: a pristine trace was once reported with another trace's results).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import pickle
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from ksptrace.cachedir import file_problem, folder_problem, private_folder, user_key
from ksptrace.errors import TraceError
from ksptrace.trace import probe

MAGIC = b"ksptrace cache entry 1\n"
SUFFIX = ".pkl"
_MAC_BYTES = 32
_BLOCK = 1 << 22


@dataclass(frozen=True)
class Cache:
    """A cache folder that passed the checks, and the key its entries are sealed with."""

    folder: Path
    key: bytes


def open_cache(folder: Path) -> Cache | str:
    """The cache in ``folder`` (made 0700 when missing), or why it may not be used."""
    problem = private_folder(folder)
    if problem is not None:
        return f"{problem}; give a folder only you can write"
    key = user_key()
    if isinstance(key, str):
        return f"no key to seal its entries with ({key})"
    return Cache(folder, key)


def content_key(path: str | os.PathLike[str]) -> str:
    """BLAKE2b (32 hex digits) of a regular file's size and data, read from one descriptor up
    to the size probed on it; TraceError for anything but a regular file, OSError when it
    cannot be opened."""
    return fingerprint(path)[0]


def fingerprint(path: str | os.PathLike[str]) -> tuple[str, tuple[int, ...] | None]:
    """:func:`content_key` of ``path``, and the source it hashed (:func:`probe.source_of`),
    None when the file changed while it was hashed. A result is stored under the key only when
    the trace it was computed from was read from this same source."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO: no wait
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(f"{path}: not a regular file; give the path of a trace file (.h5)")
        before = probe.source_of(fd)
        key = _hash(fd, st.st_size)
        return key, before if probe.source_of(fd) == before else None
    finally:
        os.close(fd)


def _hash(fd: int, size: int) -> str:
    h = hashlib.blake2b(size.to_bytes(8, "little"), digest_size=16)
    for start, end in _data_extents(fd, size):
        h.update(start.to_bytes(8, "little") + (end - start).to_bytes(8, "little"))
        while start < end:
            block = os.pread(fd, min(_BLOCK, end - start), start)
            if not block:
                return h.hexdigest()  # shrunk meanwhile: the read names the problem
            h.update(block)
            start += len(block)
    return h.hexdigest()


def _data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The parts of the file below ``size`` that hold data (holes read as zeros, so they need
    not be read); the whole file where the file system cannot tell."""
    out: list[tuple[int, int]] = []
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # only a hole is left
            return [(0, size)]
        if start >= size:
            break
        try:
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        except OSError:
            end = size
        out.append((start, end))
        pos = end
    return out


def _seal(key: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(key, name.encode() + b"\0" + payload, hashlib.sha256).digest()


def load(cache: Cache, name: str) -> object | None:
    """The object stored under ``name``, or None when it is missing or fails a check."""
    try:
        fd = os.open(cache.folder / name,
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if file_problem(fd) is not None:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    head = len(MAGIC) + _MAC_BYTES
    if len(data) < head or not data.startswith(MAGIC):
        return None
    payload = memoryview(data)[head:]
    if not hmac.compare_digest(data[len(MAGIC):head], _seal(cache.key, name, bytes(payload))):
        return None
    try:
        return pickle.loads(payload)  # sealed by this user's key in a private folder
    except Exception:  # an entry of another Python or ksptrace: analysed again
        return None


def store(cache: Cache, name: str, obj: object) -> None:
    """Write one entry (mode 0600) whole or not at all; a cache that cannot be written
    (read-only, full disk) only costs time on the next run, so failures are ignored."""
    tmp = cache.folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + _seal(cache.key, name, payload) + payload)
        os.replace(tmp, cache.folder / name)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        remove_if_empty(cache.folder)


def remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()  # only succeeds when empty


def prune(folder: Path, keep: set[str]) -> None:
    """Remove entries of traces no longer analysed (and stray temporary files); a folder that
    is not private is left alone."""
    if not folder.is_dir() or folder_problem(folder) is not None:
        return
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name not in keep and entry.suffix in (SUFFIX, ".tmp"):
                entry.unlink(missing_ok=True)
    remove_if_empty(folder)
