"""Run under mpiexec (Open MPI or MPICH) by tests/harness/test_waits.py: the wait interposer
installed into mpi4py's own extension module, whose MPI calls go through its PLT as libpetsc's
do, then waits with a known truth. Prints one JSON line per rank.

Rank 1 sleeps ``DELAY`` seconds before each of three operations, so rank 0 waits about that
long: in an MPI_Allreduce (counted), in the MPI_Wait of an MPI_Iallreduce (counted) and in the
MPI_Wait of a plain receive (a halo exchange's kind: not counted). Alone (one rank) it
makes the two reductions only, with nobody to wait for. Rank 0 prints every rank's line.
"""

from __future__ import annotations

import ctypes
import json
import time

import numpy as np
from mpi4py import MPI

from ksptrace.harness import mpiwait

DELAY = 0.2


def main() -> None:
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    clock = ctypes.cast(ctypes.CDLL(MPI.__file__).MPI_Wtime, ctypes.c_void_p).value
    assert clock is not None
    counter = mpiwait.install(clock, MPI._sizeof(MPI.Request), match="MPI.cpython")
    if isinstance(counter, str):
        raise SystemExit(f"not installed: {counter}")
    x, y = np.ones(4), np.empty(4)
    steps = []
    for what in ("allreduce", "iallreduce", "irecv")[:3 if comm.Get_size() > 1 else 2]:
        comm.Barrier()
        before = counter.totals_now()
        if rank == 1:
            time.sleep(DELAY)
        if what == "allreduce":
            comm.Allreduce(x, y)
        elif what == "iallreduce":
            comm.Iallreduce(x, y).Wait()
        elif rank == 1:
            comm.Send(x, dest=0)
        elif rank == 0:
            comm.Irecv(y, source=1).Wait()
        after = counter.totals_now()
        steps.append({"what": what, "seconds": after[0] - before[0],
                      "calls": after[1] - before[1]})
    rows = comm.gather({"rank": rank, "library": MPI.Get_library_version().split()[0],
                        "entry_points": list(counter.entry_points), "steps": steps,
                        "by_entry": counter.by_entry()}, root=0)
    for row in rows or ():  # from rank 0 alone: two ranks' lines can interleave in one
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
