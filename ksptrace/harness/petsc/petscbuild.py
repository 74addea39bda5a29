"""Which PETSc build a process runs on, read from the library it loaded: whether it was
configured with debugging (``--with-debugging``), which changes timings by a factor of two to
ten and so belongs in every trace.

petsc4py does not say, and Debian's runtime packages carry no ``petscconf.h``. Every PETSc
library, though, holds the string its configure was given (shown by ``-log_view``), so it is
read from the ``libpetsc`` file this process mapped: ``--with-debugging=0|no|false`` means an
optimised build, any other value a debugging one, and no such option PETSc's default, which is
debugging. The help text that also mentions the option ("configure using --with-debugging=yes,
recompile, ...") is not a configure line and is skipped.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import Protocol

OFF_VALUES = frozenset({"0", "no", "false", "off"})
_OPTION = re.compile(rb"--with-debugging(?:=([^\s\x00]*))?")


def mapped_petsc_libraries(maps: str | None = None) -> list[Path]:
    """The ``libpetsc*`` files this process has mapped (from /proc/self/maps)."""
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text()
        except OSError:
            return []
    found: list[Path] = []
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        if "/libpetsc" in path and path.startswith("/") and Path(path) not in found:
            found.append(Path(path))
    return found


class _Searchable(Protocol):
    def find(self, sub: bytes, start: int = ..., /) -> int: ...
    def rfind(self, sub: bytes, start: int = ..., end: int = ..., /) -> int: ...
    def __getitem__(self, index: slice, /) -> bytes: ...
    def __len__(self) -> int: ...


def _configure_lines(blob: _Searchable) -> list[bytes]:
    """NUL-delimited strings of ``blob`` (bytes, or a mapped file searched in place) that look
    like a configure command line."""
    lines: list[bytes] = []
    start = 0
    while True:
        at = blob.find(b"--with-", start)
        if at < 0:
            return lines
        lo = blob.rfind(b"\x00", 0, at) + 1
        hi = blob.find(b"\x00", at)
        hi = len(blob) if hi < 0 else hi
        text = blob[lo:hi]
        if text.count(b"--") >= 3 and b"recompile" not in text:
            lines.append(text)
        start = hi + 1


def debugging_from_configure(line: bytes) -> bool:
    """Whether a configure line builds with debugging (PETSc's default when it does not say)."""
    value = None
    for match in _OPTION.finditer(line):
        value = (match.group(1) or b"1").decode("ascii", "replace").strip("'\"").lower()
    return value is None or value not in OFF_VALUES


def debugging(paths: list[Path] | None = None) -> str:
    """``yes`` or ``no`` for the PETSc library this process loaded, ``unknown`` if not found."""
    for path in mapped_petsc_libraries() if paths is None else paths:
        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                lines = _configure_lines(m)
        except (OSError, ValueError):
            continue
        if lines:
            return "yes" if debugging_from_configure(lines[0]) else "no"
    return "unknown"
