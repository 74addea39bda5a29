"""A campaign started as a script's background job (SIGINT ignored) keeps ignoring SIGINT, says
so, and stops cleanly on SIGTERM: the running run marked interrupted, a rerun resumes (issue 36).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.jobs import state
from ksptrace.jobs.backends import alive_any
from ksptrace.jobs.expand import load_spec
from tests.conftest import sigint_ignored


def _wait_for_calls(calls: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while len(calls.read_text().splitlines()) < count:
        assert proc.poll() is None, "the campaign ended early"
        assert time.monotonic() < deadline, f"fewer than {count} runs started in 120 s"
        time.sleep(0.1)


def test_sigint_ignored_then_sigterm_stops_cleanly(
        local_campaign: Callable[..., str], write_campaign: Callable[..., Path], fake_env: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_campaign(local_campaign())
    spec = load_spec(path)
    monkeypatch.setenv("FAKE_SLEEP", "4")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ksptrace", "campaign", "run", str(path), "--backend", "local"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_ignored)
    try:
        _wait_for_calls(fake_env, 1, proc)
        proc.send_signal(signal.SIGINT)  # ignored: the first run finishes, the second starts
        _wait_for_calls(fake_env, 2, proc)
        monkeypatch.setenv("FAKE_SLEEP", "0")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, out + err
    assert "SIGINT is ignored (started in the background); stop with 'kill" in err
    assert "Traceback" not in err
    assert "interrupted" in err
    rows = {r.run_id: r.state for r in state.statuses(spec.output, state.run_dicts(spec),
                                                      alive_any)}
    assert sorted(rows.values()).count("interrupted") == 1
    assert sorted(rows.values()).count("done") >= 1  # the run that SIGINT did not stop
    again = subprocess.run(
        [sys.executable, "-m", "ksptrace", "campaign", "run", str(path), "--backend", "local"],
        capture_output=True, text=True, check=False, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert {r.state for r in state.statuses(spec.output, state.run_dicts(spec),
                                            alive_any)} == {"done"}
