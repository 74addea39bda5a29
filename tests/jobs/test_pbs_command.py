"""PBS jobs run the ksptrace that submitted them, whatever PATH the job's shell sets (issue 66).

A PBS job's login shell resets PATH; ``qsub -V`` keeps the submitter's only as ``PBS_O_PATH``.
With the documented default ``command = "ksptrace"`` and a venv, every run failed with exit
134 ("mpiexec was unable to find the specified executable"). The test renders a campaign with
the default command and runs its PBS script as such a job would: PATH without the venv.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace import escape
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runner import run_campaign
from tests.conftest import ROOT, solver_env

CAMPAIGN = """
[campaign]
name = "venv"
output = "out"

[sweep]
ksp = "cg"
nprocs = 1
n = 2000
iterations = 20

[scheduler]
walltime = "00:05:00"
"""


def test_the_default_command_is_the_submitting_ksptrace(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    spec = load_spec(tmp_path / "c.toml")
    assert spec.command == ("ksptrace",)  # the campaign file leaves it at its default
    outcome = run_campaign(spec, get_backend("pbs"), dry_run=True)
    text = (spec.output / outcome.scripts[0].path).read_text()
    assert f"{escape.shell_word(sys.executable)} -m ksptrace run " in text
    given = CAMPAIGN.replace('output = "out"', 'output = "out2"\ncommand = "my-ksptrace --x"')
    (tmp_path / "d.toml").write_text(given)
    spec = load_spec(tmp_path / "d.toml")
    outcome = run_campaign(spec, get_backend("pbs"), dry_run=True)
    assert " my-ksptrace --x run " in (spec.output / outcome.scripts[0].path).read_text()


@pytest.mark.mpi
def test_a_pbs_job_whose_shell_reset_path_still_runs(tmp_path: Path, require_petsc: None) -> None:
    if shutil.which("mpiexec", path="/usr/bin:/bin") is None:
        pytest.skip("no mpiexec in /usr/bin (the job's PATH here)")
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    spec = load_spec(tmp_path / "c.toml")
    outcome = run_campaign(spec, get_backend("pbs"), dry_run=True)
    [run] = spec.runs
    nodes = tmp_path / "nodefile"
    nodes.write_text(socket.gethostname() + "\n")
    env = solver_env(PATH="/usr/bin:/bin", PBS_O_PATH=os.environ["PATH"],
                     PBS_O_WORKDIR=str(spec.output), PBS_NODEFILE=str(nodes),
                     PBS_JOBID="7.pbshead", PYTHONPATH=str(ROOT))
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(["bash", str(spec.output / outcome.scripts[0].path)], env=env,
                          cwd="/", capture_output=True, text=True, timeout=600, check=False)
    log = spec.output / run.log
    assert proc.returncode == 0, proc.stderr + (log.read_text() if log.exists() else "")
    assert (spec.output / run.trace).is_file()
