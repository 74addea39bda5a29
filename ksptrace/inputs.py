"""Reading the small text files a user names (campaign files, ``-log_view`` output): only regular
files, and only up to a stated size, so that a FIFO, a device or a huge file is one error line
instead of a hang or an exhausted memory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ksptrace.errors import KsptraceError, UsageError


def read_bounded(path: str | os.PathLike[str], limit: int, what: str,
                 error: type[KsptraceError] = UsageError) -> bytes:
    """The bytes of the regular file ``path`` of at most ``limit`` bytes; ``error`` (one line
    naming ``what``) otherwise."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {p} is not a regular file; give the path of a file")
        if st.st_size > limit:
            raise error(f"{what} {p} holds {st.st_size} bytes, more than the {limit} a "
                        f"{what} can hold; check the path")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:
                raise error(f"{what} {p} grew past {limit} bytes while read; check the path")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
