"""PBS jobs run the ksptrace that submitted them, whatever PATH the job's shell sets (issue 66).

A PBS job's login shell resets PATH; ``qsub -V`` keeps the submitter's only as ``PBS_O_PATH``.
With the documented default ``command = "ksptrace"`` and a venv, every run failed with exit
134 ("mpiexec was unable to find the specified executable"). The test renders a campaign with
the default command and runs its PBS script as such a job would: PATH without the venv.
"""

from __future__ import annotations

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


VENV_BIN = str(Path(sys.executable).parent)


def _render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str,
            text: str = CAMPAIGN) -> tuple[Path, str]:
    monkeypatch.setenv("PATH", path)
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "c.toml").write_text(text)
    spec = load_spec(tmp_path / "c.toml")
    outcome = run_campaign(spec, get_backend("pbs"), dry_run=True)
    script = spec.output / outcome.scripts[0].path
    return script, script.read_text()


def test_the_default_command_is_the_submitting_ksptrace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (Path(VENV_BIN) / "ksptrace").is_file():
        pytest.skip("no ksptrace script beside this Python")
    # ksptrace on PATH is this one (an activated venv): the command stays 'ksptrace', and the
    # script puts the submitter's PATH back first, before the set-up lines
    _, text = _render(tmp_path / "a", monkeypatch, f"{VENV_BIN}:/usr/bin:/bin")
    assert '"$PBS_NODEFILE" ksptrace run ' in text
    assert 'if [ -n "${PBS_O_PATH:-}" ]; then export PATH="$PBS_O_PATH"; fi' in text
    assert "#PBS -V" in text
    # not on PATH, or another install first: this Python's ksptrace, by its path
    _, text = _render(tmp_path / "b", monkeypatch, "/usr/bin:/bin")
    assert f"{escape.shell_word(sys.executable)} -m ksptrace run " in text
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "ksptrace").write_text("#!/bin/sh\nexit 99\n")
    (other / "ksptrace").chmod(0o755)
    _, text = _render(tmp_path / "c", monkeypatch, f"{other}:{VENV_BIN}:/usr/bin:/bin")
    assert f"{escape.shell_word(sys.executable)} -m ksptrace run " in text
    given = CAMPAIGN.replace('output = "out"', 'output = "out"\ncommand = "my-ksptrace --x"')
    _, text = _render(tmp_path / "d", monkeypatch, "/usr/bin:/bin", given)
    assert " my-ksptrace --x run " in text


@pytest.mark.mpi
@pytest.mark.parametrize("submitted_with", ["the venv on PATH", "no ksptrace on PATH"])
def test_a_pbs_job_whose_shell_reset_path_still_runs(
        tmp_path: Path, require_petsc: None, monkeypatch: pytest.MonkeyPatch,
        submitted_with: str) -> None:
    if shutil.which("mpiexec", path="/usr/bin:/bin") is None:
        pytest.skip("no mpiexec in /usr/bin (the job's PATH here)")
    if not (Path(VENV_BIN) / "ksptrace").is_file():
        pytest.skip("no ksptrace script beside this Python")
    submit_path = (f"{VENV_BIN}:/usr/bin:/bin" if submitted_with == "the venv on PATH"
                   else "/usr/bin:/bin")
    script, _ = _render(tmp_path, monkeypatch, submit_path)
    [run] = load_spec(tmp_path / "c.toml").runs
    out = script.parents[2]
    nodes = tmp_path / "nodefile"
    nodes.write_text(socket.gethostname() + "\n")
    env = solver_env(PATH="/usr/bin:/bin", PBS_O_PATH=submit_path,  # the job's login shell
                     PBS_O_WORKDIR=str(out), PBS_NODEFILE=str(nodes),
                     PBS_JOBID="7.pbshead", PYTHONPATH=str(ROOT))
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(["bash", str(script)], env=env, cwd="/", capture_output=True,
                          text=True, timeout=600, check=False)
    log = out / run.log
    assert proc.returncode == 0, proc.stderr + (log.read_text() if log.exists() else "")
    assert (out / run.trace).is_file()
