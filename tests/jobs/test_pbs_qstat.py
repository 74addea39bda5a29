"""What the PBS backend reads from ``qstat -t -f -F json``: which subjobs still wait or run.

A fake qstat answers here; tests/jobs/test_pbs_real.py asks a real server."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ksptrace.jobs import state
from ksptrace.jobs.backends.pbs import PbsBackend

ARRAY = {"Jobs": {
    "7[].pbshead": {"job_state": "B"},
    "7[0].pbshead": {"job_state": "X"},   # finished
    "7[1].pbshead": {"job_state": "R"},
    "7[2].pbshead": {"job_state": "Q"},
}}


def fake_qstat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    prog = bindir / "qstat"
    prog.write_text(f"#!/bin/bash\n{body}\n")
    prog.chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")


def test_queued_names_the_runs_of_subjobs_still_waiting_or_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "array.json").write_text(json.dumps(ARRAY))
    last = '"${!#}"'  # the job id, qstat's last argument
    fake_qstat(tmp_path, monkeypatch, f'[ {last} = "7[].pbshead" ] && cat {tmp_path}/array.json')
    state.record_submission(tmp_path, "pbs", "7[].pbshead", "s.pbs", ["a", "b", "c"])
    assert PbsBackend().queued(tmp_path) == {"b", "c"}


@pytest.mark.parametrize(("body", "alive"), [
    ('echo \'{"Jobs": {"7[1].pbshead": {"job_state": "R"}}}\'', True),
    ('echo \'{"Jobs": {"7[1].pbshead": {"job_state": "X"}}}\'', False),
    ('echo "qstat: Unknown Job Id 7[1].pbshead" >&2; exit 153', False),
    ('echo "Connection refused" >&2; echo "qstat: cannot connect to server pbshead" >&2; exit 1',
     None),
])
def test_alive_reads_the_subjobs_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       body: str, alive: bool | None) -> None:
    fake_qstat(tmp_path, monkeypatch, body)
    assert PbsBackend().alive("pbs:7[1].pbshead") is alive
    assert PbsBackend().alive("slurm:7_1") is None


def test_with_the_server_down_a_started_run_is_unknown_and_run_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 66: with the server down, an interrupted run showed "running" and ``campaign
    run`` said "nothing to do"."""
    from ksptrace.cli.main import main
    from ksptrace.jobs.expand import load_spec

    campaign = tmp_path / "c.toml"
    campaign.write_text('[campaign]\nname = "down"\noutput = "out"\n[sweep]\nksp = "cg"\n'
                        'n = 2000\niterations = 20\n[scheduler]\nwalltime = "00:05:00"\n')
    fake_qstat(tmp_path, monkeypatch, 'echo "qstat: cannot connect to server pbshead '
                                      '(errno=111)" >&2; exit 1')
    qsub = tmp_path / "bin" / "qsub"
    qsub.write_text("#!/bin/bash\necho 7.pbshead\n")
    qsub.chmod(stat.S_IRWXU)
    assert main(["campaign", "run", str(campaign), "--backend", "pbs"]) == 0
    [run] = load_spec(campaign).runs
    out = tmp_path / "out"
    state.write_marker(out, run.run_id, "running", {"job": "pbs:7.pbshead", "log": run.log})
    capsys.readouterr()
    assert main(["campaign", "run", str(campaign), "--backend", "pbs"]) == 1
    said = capsys.readouterr().out
    assert "nothing to do" not in said
    assert ("campaign down: 1 of 1 runs are in an unknown state (their scheduler cannot be "
            "asked whether their jobs still run; its server down?)") in said
    assert main(["campaign", "status", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "1 runs: 0 done, 0 running, 0 failed, 1 unknown, 0 missing" in shown
    assert f"unknown  {run.run_id} (pbs:7.pbshead: the scheduler cannot be asked" in shown
