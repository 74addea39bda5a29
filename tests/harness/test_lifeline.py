"""The lifeline watchdog: a rank whose launcher died stops within about a second.

The unit tests watch a fake launcher (a ``sleep`` process) from a child Python process that
spins forever; the real test does the same to a long solve under ``mpiexec -n 2``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksptrace.errors import SolverError
from ksptrace.harness.launching import lifeline
from ksptrace.harness.launching.lifeline import LAUNCHER_ENV, LAUNCHER_HOST_ENV
from tests.conftest import ROOT, solver_env

MESSAGE = "ksptrace: the process that launched this solve (pid {}) has died; stopping this rank"

SPINNER = textwrap.dedent("""
    import sys
    from ksptrace.harness.launching import lifeline
    thread = lifeline.start_watchdog()
    print("watching" if thread is not None else "not watching", flush=True)
    if thread is None:
        sys.exit(0)
    x = 0
    while True:  # busy Python code, as a detour's busy-wait: the watchdog still gets its turn
        x = (x + 1) % 1000
""")


@pytest.fixture
def launcher() -> Iterator[subprocess.Popen[bytes]]:
    """A fake launcher: a process whose death the watchdog should notice."""
    proc = subprocess.Popen(["sleep", "600"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _spin(env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", SPINNER], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (LAUNCHER_ENV, LAUNCHER_HOST_ENV)}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@pytest.mark.parametrize("host", [False, True])
def test_an_orphan_stops_soon_after_its_launchers_death(
        launcher: subprocess.Popen[bytes], host: bool) -> None:
    extra = {LAUNCHER_HOST_ENV: socket.gethostname()} if host else {}
    child = _spin(_env(**{LAUNCHER_ENV: lifeline.identity(launcher.pid)}, **extra))
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "watching"
        time.sleep(1.5)  # three polls while the launcher lives: it keeps running
        assert child.poll() is None
        launcher.kill()
        launcher.wait()
        killed = time.monotonic()
        code = child.wait(timeout=10)
        elapsed = time.monotonic() - killed
        _, err = child.communicate()
    finally:
        child.kill()
        child.wait()
    assert code == SolverError.exit_code
    assert err.strip().splitlines() == [MESSAGE.format(launcher.pid)]
    assert elapsed < 15.0  # about 1 s (0.5 s polls); a loaded machine may take longer


def test_a_launcher_on_this_host_that_is_already_dead_stops_the_rank_at_once(
        launcher: subprocess.Popen[bytes]) -> None:
    ident = lifeline.identity(launcher.pid)
    launcher.kill()
    launcher.wait()
    child = _spin(_env(**{LAUNCHER_ENV: ident, LAUNCHER_HOST_ENV: socket.gethostname()}))
    try:
        code = child.wait(timeout=30)
        _, err = child.communicate()
    finally:
        child.kill()
        child.wait()
    assert code == SolverError.exit_code
    assert MESSAGE.format(launcher.pid) in err


@pytest.mark.parametrize("case", ["absent", "empty", "not-a-pid", "other-host",
                                  "invisible-without-host"])
def test_no_watchdog_when_there_is_nothing_of_ours_to_watch(case: str) -> None:
    extra = {
        "absent": {},
        "empty": {LAUNCHER_ENV: ""},
        "not-a-pid": {LAUNCHER_ENV: "node7:1234"},
        "other-host": {LAUNCHER_ENV: "999999999:1",
                       LAUNCHER_HOST_ENV: "not-" + socket.gethostname()},
        "invisible-without-host": {LAUNCHER_ENV: "999999999:1"},
    }[case]
    proc = subprocess.run([sys.executable, "-c", SPINNER], env=_env(**extra), cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "not watching", "")


def test_no_thread_starts_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifeline, "_watchdog", None)
    before = threading.enumerate()
    assert lifeline.start_watchdog(env={}) is None
    assert lifeline.start_watchdog(env={"PATH": "/usr/bin"}) is None
    assert lifeline.start_watchdog(env={LAUNCHER_ENV: "x:1"}) is None
    assert threading.enumerate() == before
    assert lifeline._watchdog is None


def test_the_watchdog_starts_once(launcher: subprocess.Popen[bytes],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    monkeypatch.setattr(lifeline, "_watchdog", None)
    monkeypatch.setattr(lifeline, "_watch", lambda ident, interval: stop.wait())  # not pytest's
    env = {LAUNCHER_ENV: lifeline.identity(launcher.pid)}
    first = lifeline.start_watchdog(env=env, interval=0.1)
    try:
        assert first is not None
        assert first.daemon
        assert first.is_alive()
        assert lifeline.start_watchdog(env=env) is first
        assert [t for t in threading.enumerate() if t.name == "ksptrace-lifeline"] == [first]
    finally:
        stop.set()
        if first is not None:
            first.join(5)


def test_an_other_hosts_launcher_is_not_judged_before_publishing() -> None:
    env = {LAUNCHER_ENV: "999999999:1", LAUNCHER_HOST_ENV: "not-" + socket.gethostname()}
    lifeline.check_launcher_alive(env)  # no error: that pid means nothing here
    with pytest.raises(SolverError, match="has died"):
        lifeline.check_launcher_alive({**env, LAUNCHER_HOST_ENV: socket.gethostname()})


def test_supervised_children_name_their_launcher_and_its_host() -> None:
    code, _ = lifeline.Supervised().run(
        [sys.executable, "-c", "import os, sys; sys.exit("
         f"os.environ['{LAUNCHER_ENV}'] != sys.argv[1] or "
         f"os.environ['{LAUNCHER_HOST_ENV}'] != sys.argv[2])",
         lifeline.identity(), socket.gethostname()],
        _env())
    assert code == 0


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.usefixtures("require_petsc")
def test_an_orphaned_solve_under_mpiexec_stops_and_publishes_nothing(
        launcher: subprocess.Popen[bytes], tmp_path: Path) -> None:
    ident = lifeline.identity(launcher.pid)
    out = tmp_path / "out"
    out.mkdir()
    env = solver_env(PYTHONPATH=str(ROOT), **{LAUNCHER_ENV: ident,
                                              LAUNCHER_HOST_ENV: socket.gethostname()})
    cmd = ["mpiexec", "-n", "2", sys.executable, "-m", "ksptrace", "run",
           "--problem", "laplace1d", "--n", "100000", "--ksp", "gmres",
           "--iterations", "100000", "--out", str(out)]
    mpiexec = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(lifeline.launched_by(ident)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)  # mpiexec and two ranks
        assert len(lifeline.launched_by(ident)) >= 3, "the solve never started"
        time.sleep(4.0)  # past PETSc's start-up and assembly: the ranks are solving
        assert mpiexec.poll() is None, mpiexec.communicate()
        solving = lifeline.launched_by(ident)
        launcher.kill()
        launcher.wait()
        killed = time.monotonic()
        code = mpiexec.wait(timeout=60)
        _, err = mpiexec.communicate()
        deadline = killed + 60
        while lifeline.launched_by(ident) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lifeline.launched_by(ident) == [], "a process of the orphaned solve still runs"
        assert time.monotonic() - killed < 60  # not the minutes the solve had left
        assert not [pid for pid in solving if lifeline.start_time(pid) is not None]
        assert code != 0
        assert MESSAGE.format(launcher.pid) in err
        time.sleep(1.0)
        assert list(out.iterdir()) == []  # no trace, no temporary file
    finally:
        lifeline.kill_group(mpiexec.pid)
        lifeline.kill_descendants_of(ident)
        with contextlib.suppress(subprocess.TimeoutExpired):
            mpiexec.communicate(timeout=10)
        for pid in lifeline.launched_by(ident):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
