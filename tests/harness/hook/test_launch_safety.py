"""``ksptrace trace`` launched in harm's way (issue 64): killed with SIGKILL mid-run, given odd
program names, an unsafe cache path, an output folder others can write, and raw records that
lie about their size. Each leaves nothing behind and says one clear line, or is made safe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, Runner, solver_env
from tests.harness.hook import own_program
from tests.harness.hook.test_tutorials import mpiexec, traced


@pytest.fixture(scope="module")
def laplace1d(ksptrace_cli: Runner, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pdir = own_program.petsc_dir()
    why = own_program.missing(pdir)
    if why is not None:
        pytest.fail(why)
    return own_program.build(tmp_path_factory.mktemp("laplace1d"), pdir)


def _running(marker: str) -> list[int]:
    """Pids of processes whose command line holds ``marker`` (a path unique to this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _until(check: object, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_sigkill_of_trace_leaves_no_process_and_no_raw_folder(
        laplace1d: Path, tmp_path: Path) -> None:
    program = tmp_path / "long-solve"
    program.symlink_to(laplace1d)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ksptrace", "trace", "--out", str(out), "--", *mpiexec(2),
           str(program), "-n", "2000", "-solves", "100000"]
    trace = subprocess.Popen(cmd, env=solver_env(), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert _until(lambda: list(out.glob(".ksptrace-hook-*/rank-*.bin")), 120), \
            "the ranks never started solving"
        assert _running(str(program))
        os.kill(trace.pid, signal.SIGKILL)
        trace.wait()
        assert _until(lambda: not _running(str(program)), 60), \
            f"left running: {_running(str(program))}"
        assert _until(lambda: not out.exists(), 30), list(out.iterdir())
    finally:
        for pid in _running(str(program)):
            os.kill(pid, signal.SIGKILL)
