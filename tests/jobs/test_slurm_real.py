"""A real Slurm on localhost (scripts/slurm-local.sh), not a mock: submit, wait, check traces."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace.io import read_trace

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm-local.sh"
CONF = "/tmp/ksptrace-slurm/slurm.conf"

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]


def _up(env: dict[str, str]) -> bool:
    if shutil.which("scontrol") is None:
        return False
    proc = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True,
                          check=False)
    return "is UP" in proc.stdout


@pytest.fixture(scope="module")
def slurm() -> Iterator[dict[str, str]]:
    env = {**os.environ, "SLURM_CONF": CONF}
    was_up = _up(env)
    if not was_up:
        proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True,
                              text=True, check=False, timeout=600)
        if proc.returncode != 0:
            why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            if "missing Debian packages" in why or "apt" in why.lower():
                pytest.skip(f"Slurm packages cannot be installed here: {why}")
            pytest.fail(f"scripts/slurm-local.sh start failed: {why}")
    yield env
    if not was_up:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, check=False)


CAMPAIGN = """
[campaign]
name = "slurmtest"
output = "out"
command = '{python} -m ksptrace'

[sweep]
ksp = "gmres"
nprocs = [1, 2, 4]
n = 4000
iterations = 40

[scheduler]
walltime = "00:05:00"
ranks_per_node = 4
exclusive = false
"""


def _wait(job: str, env: dict[str, str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i %T"], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0 and not proc.stdout.strip():
            return
        time.sleep(0.5)
    pytest.fail(f"job {job} still in the queue after {timeout} s")


def test_campaign_as_a_job_array(slurm: dict[str, str], tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in {"SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OPENBLAS_NUM_THREADS": "1",
                       "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(python=sys.executable))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    subs = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    assert len(subs) == 1, "P in {1, 2, 4} on one node is one job array"
    job = subs[0]["job_id"]
    assert job.isdigit()
    assert f"job(s) {job}" in capsys.readouterr().out
    _wait(job, slurm)

    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    assert "3 runs: 3 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    by_id = {r["run_id"]: r for r in manifest["runs"]}
    for task, run_id in enumerate(subs[0]["runs"]):
        trace = read_trace(out / by_id[run_id]["trace"])
        assert trace.nprocs == by_id[run_id]["nprocs"]
        assert str(trace.attrs["slurm_array_job_id"]) == job
        assert str(trace.attrs["slurm_array_task_id"]) == str(task)
        assert trace.attrs["run_id"] == run_id
        assert trace.attrs["campaign_hash"] == manifest["campaign_hash"]
    assert sorted(p.name for p in (out / "logs").glob("slurmtest-*.out")) == sorted(
        f"slurmtest-{job}_{i}.out" for i in range(3))

    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_impossible_request_fails_at_submit(slurm: dict[str, str], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLURM_CONF", CONF)
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(python=sys.executable).replace("ranks_per_node = 4",
                                                                    "ranks_per_node = 64"))
    path.write_text(path.read_text().replace("nprocs = [1, 2, 4]", "nprocs = 64"))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "sbatch rejected" in err[0]
    assert not (tmp_path / "out").exists()
