"""Run under mpiexec by the tests: every operation at a few sizes, one trace each in OUT."""

from __future__ import annotations

import sys
from pathlib import Path

from mpi4py import MPI

from ksptrace.collectives.algorithms import default_forcing
from ksptrace.collectives.bench import BenchSettings, execute
from ksptrace.collectives.operations import OPERATIONS
from ksptrace.collectives.params import POINT_TO_POINT
from ksptrace.harness.launching.mpienv import fail_together

out = Path(sys.argv[1])
sizes = (1, 3, 8, 24, 1024)
with fail_together(MPI.COMM_WORLD):
    for op in OPERATIONS:
        if op in POINT_TO_POINT and MPI.COMM_WORLD.Get_size() != 2:
            continue  # two ranks exactly
        s = BenchSettings(op, (0,) if op == "barrier" else sizes, repetitions=3, warmup=1,
                          forcing=default_forcing("openmpi", op), out=out / f"{op}.h5",
                          compute_seconds=2e-4, test_calls=4)
        execute(s, MPI.COMM_WORLD)
