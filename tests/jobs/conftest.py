"""Shared helpers for campaign tests: campaign files in tmp_path and a fast fake harness."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.harness.petsc.petsc_types import SOURCE_ENV

DATA = Path(__file__).resolve().parents[1] / "data" / "jobs"
FAKE = DATA / "fake_ksptrace.py"
FAKE_COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))}"


@pytest.fixture
def write_campaign(tmp_path: Path) -> Callable[[str], Path]:
    """Write a campaign file in tmp_path; returns its path."""

    def write(text: str, name: str = "campaign.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.fixture
def fake_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Environment for the fake harness; returns the file that logs its calls."""
    calls = tmp_path / "calls.log"
    calls.touch()
    monkeypatch.setenv("FAKE_CALLS", str(calls))
    monkeypatch.setenv("FAKE_SLEEP", "0")
    monkeypatch.delenv("FAKE_FAIL", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    # The fake harness needs no live petsc4py type lists (asking for them costs ~1 s a process).
    monkeypatch.setenv(SOURCE_ENV, "builtin")
    return calls


@pytest.fixture
def local_campaign() -> Callable[..., str]:
    """A campaign file's text that runs the fake harness locally."""
    return _local_campaign


def _local_campaign(runs_ksp: str = '["gmres", "bcgs"]', nprocs: str = "[1, 2]",
                   extra: str = "") -> str:
    return f"""
[campaign]
name = "t"
output = "out"
command = {FAKE_COMMAND!r}
oversubscribe = true
{extra}

[sweep]
problem = "laplace1d"
ksp = {runs_ksp}
nprocs = {nprocs}
n = 1000
iterations = 20

[scheduler]
launcher = "harness"  # the fake reads --np; no real mpiexec in these tests
"""


def kill_mid_campaign(cmd: list[str], output: Path, after: tuple[float, ...]) -> None:
    """Start the campaign runner ``cmd`` once per entry of ``after`` and SIGKILL its whole
    group that many seconds after one of its solves has started (the lock names the solve):
    a state, not a time since start, so a loaded machine cannot let a runner finish first."""
    import json
    import os
    import signal
    import subprocess
    import time

    from ksptrace.jobs.runlock import LOCK
    from tests.conftest import ROOT, solver_env

    for extra in after:
        proc = subprocess.Popen(cmd, env=solver_env(), cwd=ROOT, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, "the runner ended before a solve was seen"
            assert time.monotonic() < deadline, "no solve started within 180 s"
            try:
                held = json.loads((output / LOCK).read_text() or "{}")
            except (OSError, ValueError):
                held = {}
            if held.get("pid") == proc.pid and held.get("solve_pgid"):
                break  # this runner's solve (a killed runner's lock stays until taken over)
            time.sleep(0.05)
        time.sleep(extra)  # into the solve: start-up, work, write
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
