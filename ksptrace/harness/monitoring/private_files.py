"""Folders and files that only this user can have written: where a compiled library may be
loaded from.

A library is code: loading one that another user could have placed or swapped runs their code
as this user. The folder and file checks are :mod:`ksptrace.cachedir`'s (the analysis cache
uses them too); a library is loaded only when, besides, its content has the digest recorded
when it was built.
"""

from __future__ import annotations

import hashlib
import os

from ksptrace.cachedir import (
    WRITABLE_BY_OTHERS,
    file_problem,
    folder_problem,
    open_private,
    private_folder,
)

__all__ = ["WRITABLE_BY_OTHERS", "digest_of", "file_problem", "folder_problem", "open_private",
           "private_folder"]


def digest_of(fd: int) -> str:
    """The SHA-256 of the whole file behind ``fd`` (read from its start)."""
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()
