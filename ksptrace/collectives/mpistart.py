"""MPI for the collectives benchmark, started as a C benchmark starts it: ``MPI_Init``.

mpi4py asks for ``MPI_THREAD_MULTIPLE`` by default, and Open MPI then takes its locks on every
call: back-to-back Allreduce cost 1.31x at 8 B and 1.13x at 1 KiB against the same C kernel at
a single thread level (issue 66). Asking for ``MPI_THREAD_FUNNELED`` costs the same in Open MPI
4.1: its ``MPI_Init_thread`` turns OPAL's thread support (the atomics and locks of the
point-to-point layer) on for any level above single (``opal_set_using_threads`` when
``provided != MPI_THREAD_SINGLE``, ompi_mpi_init.c). A C program at funneled paid what one at
multiple paid (8 B against ``MPI_Init``: 1.14x and 1.40x in two interleaved runs, multiple
1.14x and 1.35x), and ksptrace at funneled 1.50-1.61x at
8-256 B against a separate C program (docs/collectives.md, "Against a separate C program").
A C benchmark (the Intel MPI Benchmarks, OSU) calls ``MPI_Init``, and so does
:func:`start_mpi` (``mpi4py.rc.threads = False``): single, unless the user's
``OMPI_MPI_THREAD_LEVEL`` says otherwise, as for the C program. Only the main thread calls MPI
(the lifeline watchdog thread never does). The level the library gave is recorded in every
collectives trace (``mpi_thread_level``), read before MPI_T can change it
(:mod:`ksptrace.collectives.mpit`).
"""

from __future__ import annotations

from typing import Any


def start_mpi() -> Any:
    """mpi4py's ``MPI`` module, initialised with ``MPI_Init`` unless MPI was already imported in
    this process (then what it gave stands, and the trace records it)."""
    import mpi4py

    mpi4py.rc.threads = False  # MPI_Init, not MPI_Init_thread
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
