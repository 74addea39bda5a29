"""Submission: job ids captured from sbatch --parsable / qsub, and guarded when missing."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ksptrace.errors import CampaignError
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.backends.slurm import parse_job_id
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runner import run_campaign

CAMPAIGN = "[campaign]\noutput = 'out'\n[sweep]\nnprocs = [1, 2]\n"


def test_parse_job_id() -> None:
    assert parse_job_id("4242\n") == "4242"
    assert parse_job_id("4242;cluster\n") == "4242"
    for bad in ("", "\n", "Submitted batch job 12", "error"):
        with pytest.raises(CampaignError, match="printed no job id"):
            parse_job_id(bad)


def fake_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, body: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    prog = bindir / name
    prog.write_text(f"#!/bin/bash\necho \"$PWD $*\" >> {tmp_path}/{name}.calls\n{body}\n")
    prog.chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    return tmp_path / f"{name}.calls"


@pytest.mark.parametrize(("backend", "program", "reply", "job"), [
    ("slurm", "sbatch", "echo '913;local'", "913"),
    ("pbs", "qsub", "echo '914[].pbs-server'", "914[].pbs-server"),
])
def test_submit_records_job_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str,
                                program: str, reply: str, job: str) -> None:
    calls = fake_program(tmp_path, monkeypatch, program, reply)
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    spec = load_spec(tmp_path / "c.toml")
    outcome = run_campaign(spec, get_backend(backend))
    assert outcome.jobs == (job,)
    line = calls.read_text().strip()
    assert line.startswith(f"{spec.output} ")  # submitted from the output folder
    if backend == "slurm":
        assert "--parsable" in line
    sub = json.loads((spec.output / "submissions.jsonl").read_text())
    assert sub["job_id"] == job
    assert sub["runs"] == [r.run_id for r in spec.runs]


def test_submission_without_a_job_id_keeps_state(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """sbatch may have queued the job anyway: keep the folder its tasks would run in."""
    fake_program(tmp_path, monkeypatch, "sbatch", "true")
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    spec = load_spec(tmp_path / "c.toml")
    with pytest.raises(CampaignError, match=r"sbatch printed no job id.*squeue"):
        run_campaign(spec, get_backend("slurm"))
    assert (spec.output / "manifest.json").exists()


@pytest.mark.parametrize(("reply", "pattern"), [
    ("echo 'sbatch: error: Batch job submission failed: Requested node configuration is not "
     "available' >&2; exit 1", "sbatch rejected .*: sbatch: error: Batch job submission failed"),
])
def test_rejected_submission_leaves_no_state(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, reply: str,
                                                    pattern: str) -> None:
    fake_program(tmp_path, monkeypatch, "sbatch", reply)
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    spec = load_spec(tmp_path / "c.toml")
    with pytest.raises(CampaignError, match=pattern):
        run_campaign(spec, get_backend("slurm"))
    assert not spec.output.exists()


def test_a_resume_never_overwrites_a_submitted_script(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 66: each resume overwrote the array script that submissions.jsonl names."""
    fake_program(tmp_path, monkeypatch, "qsub", "echo '914[].pbs-server'")
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    spec = load_spec(tmp_path / "c.toml")
    (first,) = run_campaign(spec, get_backend("pbs")).scripts
    text = (spec.output / first.path).read_text()
    (second,) = run_campaign(spec, get_backend("pbs")).scripts  # nothing ran: all resubmitted
    (third,) = run_campaign(spec, get_backend("pbs")).scripts
    assert first.path.endswith(".pbs")
    assert second.path == first.path.removesuffix(".pbs") + ".2.pbs"
    assert third.path == first.path.removesuffix(".pbs") + ".3.pbs"
    assert (spec.output / first.path).read_text() == text
    lines = (spec.output / "submissions.jsonl").read_text().splitlines()
    named = [json.loads(line)["script"] for line in lines]
    assert named == [first.path, second.path, third.path]
    assert all((spec.output / path).is_file() for path in named)
