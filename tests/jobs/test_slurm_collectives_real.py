"""A collectives campaign on the real local Slurm (scripts/slurm-local.sh): array, traces, ids."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace import collectives as ctrace
from tests.jobs.test_slurm_real import CONF, ROOT, _wait, slurm  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]

CAMPAIGN = """
[campaign]
name = "slurmcoll"
kind = "collectives"
output = "out"
command = '{python} -m ksptrace'

[sweep]
op = "allreduce"
algorithm = ["ring", "recursive_doubling"]
nprocs = 2
max_bytes = "256"
repetitions = 3

[scheduler]
walltime = "00:05:00"
ranks_per_node = 4
exclusive = false
"""


def test_collectives_campaign_on_slurm(slurm: dict[str, str], tmp_path: Path,  # noqa: F811
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in {"SLURM_CONF": CONF, "OMPI_ALLOW_RUN_AS_ROOT": "1",
                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "PYTHONPATH": str(ROOT)}.items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(python=sys.executable))
    assert main(["campaign", "run", str(path), "--backend", "slurm"]) == 0
    out = tmp_path / "out"
    (sub,) = [json.loads(x) for x in (out / "submissions.jsonl").read_text().splitlines()]
    _wait(sub["job_id"], slurm)
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 0, capsys.readouterr().out
    assert "2 runs: 2 done" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    for task, run in enumerate(manifest["runs"]):
        t = ctrace.read(out / run["trace"])
        assert t.attrs["run_id"] == run["run_id"]
        assert t.attrs["algorithm_name"] == run["params"]["algorithm"]
        assert str(t.attrs["slurm_job_id"]).isdigit()
        assert json.loads(str(t.attrs["algorithm_held"]))[
            "coll_tuned_allreduce_algorithm"] == {"ring": 4, "recursive_doubling": 3}[
            run["params"]["algorithm"]]
        assert task == run["index"]
