"""``ksptrace campaign``: plan, run (dry and local), status, and one-line errors on bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace.read import read_trace

SMALL = """
[campaign]
name = "small"
output = "out"

[sweep]
ksp = ["gmres", "bcgs"]
nprocs = [1, 2]
n = 2000
iterations = 30

[scheduler]
walltime = "00:05:00"
ranks_per_node = 2
"""


def write(tmp_path: Path, text: str = SMALL) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ksptrace: error: ")
    return err[0]


def test_plan_lists_runs_and_costs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "plan", str(write(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "campaign small: 4 runs" in out
    assert out.count(" gmres ") == 2
    assert "core-hours" in out
    assert not (tmp_path / "out").exists()
    assert "noise" not in out  # no noise column when no run has noise


def test_plan_shows_the_noise_that_tells_runs_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = SMALL.replace('iterations = 30', 'iterations = 30\nnoise = ["none", "fixed:value=1ms"]')
    assert main(["campaign", "plan", str(write(tmp_path, text))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("noise")
    rows = lines[2:-1]
    assert sum(r.endswith(" none") for r in rows) == 4
    assert sum(r.endswith(" fixed:value=1ms,p=1,per=rank,seed=0") for r in rows) == 4


@pytest.mark.parametrize(("backend", "suffix"), [("slurm", ".sbatch"), ("pbs", ".pbs"),
                                                  ("local", ".sh")])
def test_dry_run_writes_scripts_and_manifest_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, suffix: str) -> None:
    path = write(tmp_path)
    assert main(["campaign", "run", str(path), "--backend", backend, "--dry-run"]) == 0
    out = tmp_path / "out"
    scripts = list((out / "scripts" / backend).iterdir())
    assert [s.suffix for s in scripts] == [suffix]
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["runs"]) == 4
    assert not (out / "submissions.jsonl").exists()
    assert "nothing submitted" in capsys.readouterr().out


@pytest.mark.parametrize(("backend", "program"), [("slurm", "sbatch"), ("pbs", "qsub")])
def test_missing_submit_program_is_one_line_and_no_state(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        backend: str, program: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["campaign", "run", str(write(tmp_path)), "--backend", backend]) == 3
    assert f"'{program}' not found on PATH" in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("text", "code", "pattern"), [
    ("[sweep\n", 7, "malformed TOML"),
    ("[sweep]\nkps = 'cg'\n", 7, "did you mean 'ksp'"),
    ("[scheduler]\nwalltime = '00:61:00'\n", 7, "walltime '00:61:00' has minutes"),
    ("[sweep]\nnprocs = [1, 4096]\n", 7, "needs P=4096 ranks but this machine has"),
])
def test_bad_input_is_one_line_and_no_state(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, code: int,
        pattern: str) -> None:
    path = write(tmp_path, "[campaign]\noutput = 'out'\n" + text if text.startswith("[s")
                 else text)
    assert main(["campaign", "run", str(path), "--backend", "local"]) == code
    assert pattern in one_error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_unknown_backend_lists_the_valid_ones(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "run", str(write(tmp_path)), "--backend", "lsf"]) == 2
    assert "valid backends: local, slurm, pbs" in one_error_line(capsys)


def test_status_of_a_folder_that_is_not_a_campaign(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "status", str(tmp_path)]) == 7
    assert "no manifest.json" in one_error_line(capsys)


def test_status_lists_failures_with_their_log(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path)
    assert main(["campaign", "run", str(path), "--backend", "slurm", "--dry-run"]) == 0
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    failed = manifest["runs"][2]["run_id"]
    (out / "state" / f"{failed}.failed").write_text(f"job=slurm:9_2\nrc=5\nlog=logs/{failed}.log\n")
    capsys.readouterr()
    assert main(["campaign", "status", str(out)]) == 1
    text = capsys.readouterr().out
    assert "4 runs: 0 done, 0 running, 1 failed, 3 missing" in text
    assert f"failed   {failed} (exit code 5)  log: {out / 'logs' / failed}.log" in text


@pytest.mark.mpi
def test_local_campaign_with_the_real_harness(tmp_path: Path, ksptrace_cli) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path, SMALL.replace('name = "small"', 'name = "small"\ncommand = '
                                         f"'{sys.executable} -m ksptrace'"))
    proc = ksptrace_cli("campaign", "run", str(path), "--backend", "local")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 runs: 4 done" in proc.stdout
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for run in manifest["runs"]:
        trace = read_trace(tmp_path / "out" / run["trace"])
        assert trace.attrs["run_id"] == run["run_id"]
        assert trace.attrs["campaign_hash"] == manifest["campaign_hash"]
        assert trace.nprocs == run["nprocs"]
        assert trace.iterations == 30
    again = ksptrace_cli("campaign", "run", str(path), "--backend", "local")
    assert "nothing to do" in again.stdout
