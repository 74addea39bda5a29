"""Leaving the process without the interpreter's teardown, when nothing needs it.

Once a command has returned, its files are written and closed and its children waited for;
what is left of the exit is the interpreter taking itself apart: every module of scipy,
pandas and h5py cleared and every object freed, 0.09-0.14 s after a demo analysis (a thirtieth
of it). :func:`leave` flushes the standard streams, runs the ``atexit`` functions as the
interpreter would, then ends the process with ``os._exit`` (mypy leaves the same way). It keeps
the ordinary exit when the teardown may matter: a thread other than the main one is alive (the
interpreter would wait for it), MPI or PETSc is loaded (they finalize in the teardown, after
the ``atexit`` functions), a profiler or tracer is set (``python -m cProfile`` and ``trace`` write
their results after the command returns, debuggers watch the exit), or a standard stream cannot
be flushed (the ordinary exit reports it).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

NEEDS_TEARDOWN = ("mpi4py", "petsc4py")
"""Modules whose finalization (MPI_Finalize, PetscFinalize) runs in the interpreter's teardown."""


def teardown_needed() -> bool:
    """Whether this process must leave by the ordinary exit."""
    return (threading.active_count() > 1 or any(m in sys.modules for m in NEEDS_TEARDOWN)
            or sys.getprofile() is not None or sys.gettrace() is not None)


def leave(code: int) -> NoReturn:
    """Exit with ``code``: quickly when :func:`teardown_needed` says it may, else as usual."""
    if not teardown_needed():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken stream: the ordinary exit says so
            sys.exit(code)
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)
