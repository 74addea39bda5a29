"""Issue 66: ``loadavg_before`` was read after the measurement (a run started at load 10.9
recorded 6.1). Each read of the load average here returns a larger number than the one before,
so the order of the reads shows in the trace, with no timing involved."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.trace import collectives as ctrace
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi

ORDER = """
import itertools, os, sys
from pathlib import Path
from mpi4py import MPI
from ksptrace.collectives import bench
from ksptrace.collectives.algorithms import default_forcing

reads = itertools.count(1)
os.getloadavg = lambda: (float(next(reads)), 0.0, 0.0)  # every read later than the last
measure, during = bench._measure, []

def timed(*args, **kwargs):
    during.append(os.getloadavg()[0])
    return measure(*args, **kwargs)

bench._measure = timed
s = bench.BenchSettings("allreduce", (8, 64), 2, 1, default_forcing("openmpi", "allreduce"),
                        Path(sys.argv[1]))
bench.execute(s, MPI.COMM_WORLD)
print(during[0])
"""


def test_the_load_before_is_read_before_the_measurement(tmp_path: Path) -> None:
    if shutil.which("mpiexec") is None:
        pytest.skip("needs mpiexec")
    script = tmp_path / "order.py"
    script.write_text(ORDER)
    out = tmp_path / "t.h5"
    proc = subprocess.run(["mpiexec", "--oversubscribe", "-n", "1", sys.executable, str(script),
                           str(out)], env=solver_env(), capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    during = float(proc.stdout.split()[-1])
    t = ctrace.read(out)
    assert float(t.attrs["loadavg_before"]) < during < float(t.attrs["loadavg_after"])
