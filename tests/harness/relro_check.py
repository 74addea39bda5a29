"""Run under mpiexec by tests/harness/test_waits.py: the wait interposer on a library linked
with full RELRO (``-z now``: its PLT slots read-only once loaded), so the slots must be made
writable for the rewrite and read-only again. Argument: that library (built by the test), whose
``ksptrace_test_allreduce`` calls MPI_Allreduce through its PLT. Rank 0 prints one JSON line
per rank.
"""

from __future__ import annotations

import ctypes
import json
import sys
import time

from mpi4py import MPI

from ksptrace.harness.monitoring import mpiwait


def main() -> None:
    comm = MPI.COMM_WORLD
    lib = ctypes.CDLL(sys.argv[1])
    clock = ctypes.cast(ctypes.CDLL(MPI.__file__).MPI_Wtime, ctypes.c_void_p).value
    assert clock is not None
    counter = mpiwait.install(clock, MPI._sizeof(MPI.Request), match="librelro")
    if isinstance(counter, str):
        raise SystemExit(f"not installed: {counter}")
    comm.Barrier()
    before = counter.totals_now()
    if comm.Get_rank() == 1:
        time.sleep(0.2)
    lib.ksptrace_test_allreduce()
    after = counter.totals_now()
    rows = comm.gather({"rank": comm.Get_rank(), "seconds": after[0] - before[0],
                        "calls": after[1] - before[1]}, root=0)
    for row in rows or ():  # from rank 0 alone: two ranks' lines can interleave in one
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
