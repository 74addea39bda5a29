"""MPI for the collectives benchmark, started at the thread level a C benchmark runs at.

mpi4py asks for ``MPI_THREAD_MULTIPLE`` by default, and Open MPI then takes its locks on every
call: back-to-back Allreduce cost 1.31x at 8 B and 1.13x at 1 KiB against the same C kernel at
a single thread level (issue 66). A C benchmark (the Intel MPI Benchmarks, OSU) calls
``MPI_Init``, which gives a single-threaded level; here only the main thread calls MPI (the
lifeline watchdog thread never does), which is ``MPI_THREAD_FUNNELED``: what is asked for
(Open MPI 4.1.4 answers it with ``MPI_THREAD_SINGLE``). The level the library gave is recorded
in every collectives trace (``mpi_thread_level``).
"""

from __future__ import annotations

from typing import Any

THREAD_LEVEL = "funneled"
"""What :func:`start_mpi` asks mpi4py for (``mpi4py.rc.thread_level``)."""


def start_mpi() -> Any:
    """mpi4py's ``MPI`` module, initialised at :data:`THREAD_LEVEL` unless MPI was already
    imported in this process (then what it gave stands, and the trace records it)."""
    import mpi4py

    mpi4py.rc.thread_level = THREAD_LEVEL
    from mpi4py import MPI

    return MPI


def thread_level() -> str:
    """The thread level MPI provides in this process: single, funneled, serialized or
    multiple."""
    from mpi4py import MPI

    names = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
             MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    level = MPI.Query_thread()
    return names.get(level, str(level))
