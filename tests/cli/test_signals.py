"""``ksptrace run`` started with SIGINT ignored keeps ignoring it and stops cleanly on SIGTERM
(issue 36); SIGTERM is Ctrl-C for every command, restored afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ksptrace.cli.signals import sigint_ignored, sigterm_as_ctrl_c
from tests.conftest import ROOT, solver_env
from tests.conftest import sigint_ignored as start_ignoring


def test_sigterm_raises_keyboard_interrupt_within_and_is_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with sigterm_as_ctrl_c(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next bytecode
    assert signal.getsignal(signal.SIGTERM) == before


def test_sigint_ignored_is_seen() -> None:
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert sigint_ignored()
    finally:
        signal.signal(signal.SIGINT, old)
    assert not sigint_ignored() or old == signal.SIG_IGN


def _solving(pid: int) -> bool:
    """The solve runs: the C monitor's library (or, without a compiler, numpy's and PETSc's)
    is mapped and the process has used a second of CPU."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return "libpetsc" in maps and cpu > 1.0


@pytest.mark.usefixtures("require_petsc")
@pytest.mark.parametrize("np_flag", [[], ["--np", "2"]])
def test_run_ignores_sigint_and_stops_on_sigterm(tmp_path: Path, np_flag: list[str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ksptrace", "run", "--n", "200000", "--iterations", "5000000",
         *np_flag, "--out", str(tmp_path)],
        env=solver_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=start_ignoring)
    try:
        deadline = time.monotonic() + 120
        while not any(_solving(pid) for pid in _naming(str(tmp_path))):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the solve never started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=2)  # still solving: SIGINT stays ignored
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "ksptrace: interrupted" in err
    assert "Traceback" not in err
    deadline = time.monotonic() + 60
    while _naming(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _naming(str(tmp_path)) == []  # mpiexec and its ranks are gone too
    assert list(tmp_path.iterdir()) == []  # no trace, no temporary file


def _naming(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (the command, mpiexec, its ranks)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
