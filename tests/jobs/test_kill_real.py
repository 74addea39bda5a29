"""A campaign of real solver runs killed at several moments, then rerun: complete, no duplicate
or corrupt trace, nothing left behind. (test_local_resume.py does the same with a fast fake.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.jobs import state
from ksptrace.jobs.backends import alive_any
from ksptrace.jobs.expand import load_spec
from ksptrace.trace.read import read_trace
from tests.conftest import ROOT, solver_env
from tests.jobs.conftest import kill_mid_campaign

pytestmark = pytest.mark.mpi

CAMPAIGN = """
[campaign]
name = "killme"
output = "out"
repetitions = 2

[sweep]
problem = "laplace1d"
n = 200000
ksp = ["gmres", "bcgs"]
nprocs = [1, 2]
iterations = 400
"""


def test_real_campaign_killed_then_resumed(require_petsc: None, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN)
    spec = load_spec(path)
    cmd = [sys.executable, "-m", "ksptrace", "campaign", "run", str(path), "--backend", "local"]
    env = solver_env()
    # each run takes seconds (mpiexec, PETSc, 400 iterations of 2e5 unknowns): a kill at most
    # 1 s into a solve leaves at least 5 of the 8 runs to the resume
    kill_mid_campaign(cmd, spec.output, (0.0, 1.0, 0.5))
    for trace in (spec.output / "traces").glob("*.h5"):
        read_trace(trace)  # whatever exists is complete
    statuses = state.statuses(spec.output, state.run_dicts(spec), alive_any)
    assert sum(s.state == "done" for s in statuses) < len(spec.runs), "killed too late"
    final = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300,
                           check=False)
    assert final.returncode == 0, final.stdout + final.stderr
    names = sorted(p.name for p in (spec.output / "traces").iterdir())
    assert names == sorted(f"{r.run_id}.h5" for r in spec.runs)
    for r in spec.runs:
        trace = read_trace(spec.output / r.trace)
        assert trace.attrs["run_id"] == r.run_id
        assert trace.iterations == 400
    statuses = state.statuses(spec.output, state.run_dicts(spec), alive_any)
    assert {s.state for s in statuses} == {"done"}
