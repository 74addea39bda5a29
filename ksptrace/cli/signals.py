"""How a ksptrace command stops: SIGTERM as Ctrl-C, and SIGINT as it was inherited.

A shell that starts a command in the background (``cmd &`` in a script, ``nohup``) sets SIGINT
to ignored, so that a Ctrl-C at the terminal does not reach it. ksptrace keeps that choice: a
command started with SIGINT ignored goes on ignoring it. SIGTERM (``kill PID``, a scheduler's
time limit) always stops a command the way Ctrl-C does: the running solve's whole process group
is ended, a campaign marks that run *interrupted* (a rerun resumes it), nothing half-written is
published, and the command exits 130. The ranks of a solve under an MPI launcher keep the
default dispositions: their launcher (mpiexec, srun) decides how they end.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from ksptrace.harness.launching.mpienv import under_mpi_launcher


def sigint_ignored() -> bool:
    """Whether this process was started with SIGINT ignored (a background job of a script)."""
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt as Ctrl-C does (main thread, not
    under an MPI launcher); the previous handler comes back afterwards."""
    old = signal.getsignal(signal.SIGTERM)
    if (threading.current_thread() is not threading.main_thread() or under_mpi_launcher()
            or old == signal.SIG_IGN):
        yield
        return
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
