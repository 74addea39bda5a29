"""The lifeline of a traced command: nothing of it outlives ``ksptrace trace``.

``trace`` runs the command through :class:`ksptrace.harness.launching.lifeline.Supervised` (its own
process group, dying with ``trace``, every process of it carrying ``trace``'s identity in its
environment) and forks a *guard* first: a small process that holds the read end of a pipe whose
write end only ``trace`` holds. When ``trace`` ends normally it says so down the pipe and the
guard exits. When ``trace`` dies any other way (SIGKILL, a crash), the pipe closes unannounced
and the guard kills what is left of the command (its process group, and every process whose
environment names ``trace`` as its launcher: mpiexec, the ranks, whatever a shell started) and
removes the hook's raw folder, and the output folder when ``trace`` made it and it holds nothing.
The guard ignores SIGINT and SIGTERM, which a terminal sends to the whole group: it acts on the
pipe alone. It ends the command with SIGTERM first and SIGKILL only after a grace, so that
``srun`` can end its step and release the allocation it made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

from ksptrace.harness.launching import lifeline

DONE = b"d"
GRACE_SECONDS = 20.0
"""How long the command's processes have to end after SIGTERM before SIGKILL (srun waits
up to Slurm's KillWait, 30 s by default, for its step's tasks; they get SIGTERM too)."""
TRACE_ENV = "KSPTRACE_TRACE"
"""``<pid>:<start time>`` of the ``ksptrace trace`` whose command this process belongs to (kept
apart from a campaign's launcher variable, which a traced command may inherit)."""


class Guard:
    """A forked guard of ``raw`` (and ``out`` when ``made``) for the command launched by this
    process; :meth:`release` when this process is done with them."""

    def __init__(self, raw: Path, out: Path, made: bool) -> None:
        read, self._write = os.pipe()
        ident = lifeline.identity()
        self.env = {TRACE_ENV: ident}
        """What the command's environment carries, so that the guard can find its processes."""
        pid = os.fork()
        if pid == 0:  # the guard
            try:
                os.close(self._write)
                _watch(read, ident, raw, out, made)
            finally:
                os._exit(0)
        os.close(read)
        self.pid = pid

    def release(self) -> None:
        """Tell the guard all is well (the caller cleans up) and reap it."""
        with contextlib.suppress(OSError):
            os.write(self._write, DONE)
        with contextlib.suppress(OSError):
            os.close(self._write)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self.pid, 0)


def _watch(read: int, ident: str, raw: Path, out: Path, made: bool) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    os.setsid()  # out of trace's process group: a kill of that group leaves the guard
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # hold no terminal or pipe of trace's caller open
        os.dup2(null, fd)
    got = b""
    with contextlib.suppress(OSError):
        got = os.read(read, 1)
    if got == DONE:
        return
    # SIGTERM first, and a grace: a launcher that holds something elsewhere must give it back
    # itself. srun killed outright left the job allocation it had made running, empty, until its
    # time limit (UNLIMITED on the local Slurm), and a step's ranks on other nodes to Slurm.
    lifeline.kill_descendants_of(ident, signal.SIGTERM, variable=TRACE_ENV)
    end = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < end and lifeline.launched_by(ident, variable=TRACE_ENV):
        time.sleep(0.2)
    for _ in range(3):  # mpiexec may start a rank while the first pass runs
        if not lifeline.kill_descendants_of(ident, variable=TRACE_ENV):
            break
        time.sleep(0.2)
    shutil.rmtree(raw, ignore_errors=True)
    if made:
        with contextlib.suppress(OSError):
            out.rmdir()
