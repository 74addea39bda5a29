"""A campaign lock no one can forge, and no file in its place that hangs or floods a runner
(issue 66).

The attacker is another uid (``setpriv``, as the suite runs as root): it writes a lock into a
folder it may write to, naming a process group it can see in ``/proc`` (its pid and start time
are public). The runner that finds the lock stale must leave every such group alive: an
unrelated process of its own user, and another user's. What it still ends is a dead holder's
solve that carries the lock's secret token.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ksptrace.errors import CampaignError
from ksptrace.harness.launching import lifeline
from ksptrace.jobs.runlock import LOCK, MAX_BYTES, CampaignLock, campaign_lock
from tests.conftest import dies_with_the_suite

ATTACKER = 4243
VICTIM = 4244
"""Uids that are neither root nor nobody (no account needed for setpriv)."""


def _needs_setpriv() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("an attacker of another uid needs root and setpriv (util-linux)")


def _as(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A campaign folder others may write to (sticky and world-writable, like /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="ksptrace-lock-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _sleeper(prefix: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*prefix, "sleep", "600"], start_new_session=True,
                            preexec_fn=dies_with_the_suite)


def _survives(proc: subprocess.Popen[bytes]) -> None:
    """``proc`` is still running a second later (a SIGKILL sent to it ends it at once)."""
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)


def _forge(folder: Path, victim: int, token: str = "0" * 32) -> None:
    """As the attacker: a lock of a dead holder naming ``victim``'s group, leader and launcher
    identity, with this boot's id, in every field the runner reads."""
    started = lifeline.start_time(victim)
    assert started is not None
    forged = {"pid": 2 ** 22 + 1, "host": socket.gethostname(),
              "identity": f"{2 ** 22 + 1}:1", "boot_id": lifeline.boot_id(),
              "started": "then", "solve_pgid": victim, "solve_leader": f"{victim}:{started}",
              "token": token}
    subprocess.run([*_as(ATTACKER), "/bin/sh", "-c", 'printf %s "$1" > "$2"', "sh",
                    json.dumps(forged), str(folder / LOCK)], check=True, timeout=60)
    assert (folder / LOCK).stat().st_uid == ATTACKER


def test_a_forged_lock_never_signals_a_group_of_the_runners_user_or_another_users(
        shared: Path) -> None:
    """Issue 66: a lock forged by another user (the sleep's pid and start time read from
    /proc) made a root runner SIGKILL an unrelated sleep and another user's group."""
    _needs_setpriv()
    own, others = _sleeper([]), _sleeper(_as(VICTIM))
    try:
        for victim in (own, others):
            _forge(shared, victim.pid)
            with campaign_lock(shared):
                pass
            _survives(own)
            _survives(others)
    finally:
        for proc in (own, others):
            proc.kill()
            proc.wait()


def test_a_copy_of_this_users_own_lock_signals_nothing_without_the_token(tmp_path: Path) -> None:
    """A lock of this user that names a group whose leader lacks the token (a number reused
    since, or an edited lock) leaves that group alone."""
    stranger = _sleeper([])
    try:
        lock = CampaignLock(tmp_path)
        stale = {**lock.data, "pid": 2 ** 22 + 1, "identity": f"{2 ** 22 + 1}:1",
                 "solve_pgid": stranger.pid, "solve_leader": lifeline.identity(stranger.pid)}
        (tmp_path / LOCK).write_text(json.dumps(stale))
        with campaign_lock(tmp_path):
            pass
        _survives(stranger)
    finally:
        stranger.kill()
        stranger.wait()


def test_a_dead_holders_solve_carrying_its_token_is_still_ended(tmp_path: Path) -> None:
    holder = CampaignLock(tmp_path)
    ident = f"{2 ** 22 + 1}:1"
    env = {**os.environ, lifeline.TOKEN_ENV: holder.token, lifeline.LAUNCHER_ENV: ident}
    solve = subprocess.Popen(["sleep", "600"], start_new_session=True, env=env,
                             preexec_fn=dies_with_the_suite)
    regrouped = subprocess.Popen(["sleep", "600"], start_new_session=True, env=env,
                                 preexec_fn=dies_with_the_suite)  # an MPI library's own group
    try:
        stale = {**holder.data, "pid": 2 ** 22 + 1, "identity": ident, "solve_pgid": solve.pid,
                 "solve_leader": lifeline.identity(solve.pid)}
        (tmp_path / LOCK).write_text(json.dumps(stale))
        with campaign_lock(tmp_path):
            assert solve.wait(timeout=60) == -9
            assert regrouped.wait(timeout=60) == -9
    finally:
        for proc in (solve, regrouped):
            proc.kill()
            proc.wait()


def test_a_lock_of_another_boot_signals_nothing(tmp_path: Path) -> None:
    holder = CampaignLock(tmp_path)
    solve = subprocess.Popen(["sleep", "600"], start_new_session=True,
                             env={**os.environ, lifeline.TOKEN_ENV: holder.token},
                             preexec_fn=dies_with_the_suite)
    try:
        stale = {**holder.data, "pid": 2 ** 22 + 1, "identity": f"{2 ** 22 + 1}:1",
                 "boot_id": "00000000-0000-0000-0000-000000000000",
                 "solve_pgid": solve.pid, "solve_leader": lifeline.identity(solve.pid)}
        (tmp_path / LOCK).write_text(json.dumps(stale))
        with campaign_lock(tmp_path):
            pass
        _survives(solve)
    finally:
        solve.kill()
        solve.wait()


def test_the_lock_is_this_users_alone(tmp_path: Path) -> None:
    with campaign_lock(tmp_path):
        assert (tmp_path / LOCK).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("target", ["/dev/zero", "a file of the attacker's"])
def test_a_lock_symlinked_anywhere_is_refused_in_one_line(tmp_path: Path, target: str) -> None:
    """Issue 66: a lock linked to /dev/zero grew the runner by 0.3-1.1 GB/s."""
    if target != "/dev/zero":
        planted = tmp_path / "elsewhere"
        planted.write_text(json.dumps({"pid": 1}))
        target = str(planted)
    (tmp_path / LOCK).symlink_to(target)
    with pytest.raises(CampaignError, match=r"campaign\.lock is a symbolic link, not a lock "
                                            r"ksptrace wrote; remove it \(rm\) and rerun$"):
        CampaignLock(tmp_path).acquire()
    assert (tmp_path / LOCK).is_symlink()  # nothing of the user's removed or followed
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _in_thread(call: Callable[[], None]) -> list[BaseException | None]:
    """Run ``call`` in a daemon thread for up to 60 s: a hang fails the test, not the suite."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert outcome, "acquiring the lock hung"
    return outcome


def test_a_fifo_lock_is_refused_without_hanging(tmp_path: Path) -> None:
    """Issue 66: a FIFO in the lock's place hung the runner."""
    os.mkfifo(tmp_path / LOCK)
    [exc] = _in_thread(CampaignLock(tmp_path).acquire)
    assert isinstance(exc, CampaignError)
    assert str(exc) == f"{tmp_path / LOCK} is a FIFO, not a lock ksptrace wrote; remove it (rm) " \
                       "and rerun"


def test_an_oversized_lock_is_stale_and_read_no_further(tmp_path: Path) -> None:
    (tmp_path / LOCK).write_bytes(b" " * (MAX_BYTES + 1) + b'{"pid": 1}')
    with campaign_lock(tmp_path) as lock:
        assert json.loads((tmp_path / LOCK).read_text())["token"] == lock.token


def test_a_planted_link_at_the_private_name_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / f".{LOCK}.new-{os.getpid()}").symlink_to(victim)
    with campaign_lock(tmp_path):
        pass
    assert victim.read_text() == "keep"
