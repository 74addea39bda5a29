"""Why a scheduler killed a job, as the job's own output says (issue 66).

A run whose job is gone while its ``running`` marker stays was killed before its script could
say so: by the user (``qdel``), a node failure, or the scheduler itself for going past a
limit. Only the last names its reason somewhere ksptrace can read: PBS's MoM writes it into the
job's standard error, which the campaign's scripts (``-j oe -o logs/``) have delivered to the
campaign's ``logs/`` folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ksptrace.jobs.spec import LOGS_DIR

PBS_KILLED = "=>> PBS: job killed: "
"""How PBS's MoM tells a job it killed it (walltime, mem, cput ... exceeded limit), in the job's
standard error, which ``-j oe -o logs/`` delivers to ``logs/<job id>.OU`` (OpenPBS names a file
in an output folder after the job id and ``.OU``)."""
TAIL_BYTES = 1 << 16


def scheduler_kill(folder: Path, job: str) -> tuple[str, str] | None:
    """Why the scheduler killed ``job`` (``pbs:<id>``), as its output file says, and that file
    (relative to ``folder``); None when nothing says so (a qdel, a node failure, another
    scheduler)."""
    kind, _, jid = job.partition(":")
    if kind != "pbs" or not jid or "/" in jid or jid.startswith("."):
        return None
    name = f"{LOGS_DIR}/{jid}.OU"
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        size = st.st_size
        tail = os.pread(fd, TAIL_BYTES, max(0, size - TAIL_BYTES))
    except OSError:
        return None
    finally:
        os.close(fd)
    for line in reversed(tail.decode(errors="replace").splitlines()):
        if line.startswith(PBS_KILLED):
            return f"PBS: {line[len(PBS_KILLED):].strip()[:200]}", name
    return None
