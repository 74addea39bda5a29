"""The campaign lock under races: many processes reaching for one folder at the same moment.

Each round, every racer tries to take the lock, then all wait at a barrier before a winner lets
go, so the count of winners is a state, not a timing: it must be exactly one.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from ksptrace.errors import CampaignError
from ksptrace.harness.launching import lifeline
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runlock import LOCK, CampaignLock, campaign_lock
from ksptrace.jobs.runner import run_campaign
from tests.conftest import dies_with_the_suite

RACERS = 6
ROUNDS = 12


def _racer(folder: str, start: Barrier, tried: Barrier, wins: mp.Queue) -> None:  # type: ignore[type-arg]
    for _ in range(ROUNDS):
        start.wait()
        lock = CampaignLock(Path(folder))
        try:
            lock.acquire()
            won = True
        except CampaignError:
            won = False
        wins.put(won)
        tried.wait()  # nobody lets go before everybody has tried
        if won:
            lock.release()


def _race(folder: Path, stale: dict[str, object] | None = None) -> list[int]:
    ctx = mp.get_context("fork")
    start, tried = ctx.Barrier(RACERS + 1), ctx.Barrier(RACERS)
    wins: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_racer, args=(str(folder), start, tried, wins))
             for _ in range(RACERS)]
    for p in procs:
        p.start()
    counts = []
    for _ in range(ROUNDS):
        if stale is not None:
            (folder / LOCK).write_text(json.dumps(stale))
        start.wait(timeout=120)
        counts.append(sum(wins.get(timeout=120) for _ in range(RACERS)))
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    return counts


def _dead_holder() -> dict[str, object]:
    return {"pid": 1, "host": socket.gethostname(), "identity": "1:0", "started": "then",
            "solve_pgid": None}


def test_racers_on_a_free_folder_give_one_holder_each_round(tmp_path: Path) -> None:
    assert _race(tmp_path) == [1] * ROUNDS
    assert not (tmp_path / LOCK).exists()


def test_racers_on_a_stale_lock_give_one_holder_each_round(tmp_path: Path) -> None:
    assert _race(tmp_path, stale=_dead_holder()) == [1] * ROUNDS


def test_a_live_holder_refuses_with_who_and_since(tmp_path: Path) -> None:
    with (campaign_lock(tmp_path),
          pytest.raises(CampaignError, match=r"is being run by pid \d+ on .* since ")):
        CampaignLock(tmp_path).acquire()
    assert not (tmp_path / LOCK).exists()


def test_an_empty_or_garbled_lock_is_stale_and_taken_over(tmp_path: Path) -> None:
    for text in ("", "{not json", "[1, 2]"):
        (tmp_path / LOCK).write_text(text)
        with campaign_lock(tmp_path) as lock:
            assert json.loads((tmp_path / LOCK).read_text())["pid"] == lock.data["pid"]
        assert not (tmp_path / LOCK).exists()


def test_the_lock_appears_whole_and_leaves_no_private_file(tmp_path: Path) -> None:
    with campaign_lock(tmp_path):
        held = json.loads((tmp_path / LOCK).read_text())
        assert {"pid", "host", "identity", "started", "solve_pgid"} <= set(held)
        assert not list(tmp_path.glob(f".{LOCK}.new-*"))


def test_private_files_of_killed_runners_are_swept(tmp_path: Path) -> None:
    dead = 2 ** 22 + 1  # above pid_max's default: no such process
    for name in (f".{LOCK}.new-{dead}", f".{LOCK}.tmp-{dead}"):
        (tmp_path / name).write_text("{}")
    with campaign_lock(tmp_path):
        pass
    assert not list(tmp_path.iterdir())  # and the lock leaves no file behind


def test_a_folder_removed_while_held_is_released_quietly(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    with campaign_lock(folder):
        shutil.rmtree(folder)  # what a rejected first submission does
    assert not folder.exists()


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process group (``setsid sleep``) that no runner may touch."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True,
                            preexec_fn=dies_with_the_suite)
    yield proc
    proc.kill()
    proc.wait()


def _survives(proc: subprocess.Popen[bytes]) -> None:
    """``proc`` is still running a second later (a SIGKILL sent to it ends it at once)."""
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)


def _stale_lock_naming(folder: Path, pgid: int, leader: str | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stale = {**_dead_holder(), "solve_pgid": pgid}
    if leader is not None:
        stale["solve_leader"] = leader
    (folder / LOCK).write_text(json.dumps(stale))


@pytest.mark.parametrize("leader", ["none recorded", "its pid, another start time"])
def test_a_stale_lock_never_kills_a_group_that_is_not_the_dead_holders_solve(
        tmp_path: Path, stranger: subprocess.Popen[bytes], leader: str) -> None:
    """Issue 50: a stale lock's ``solve_pgid`` named an unrelated group (a number reused since
    the holder died), and the next runner SIGKILLed it."""
    started = lifeline.start_time(stranger.pid)
    assert started is not None
    recorded = None if leader == "none recorded" else f"{stranger.pid}:{int(started) + 1}"
    _stale_lock_naming(tmp_path, stranger.pid, recorded)
    with campaign_lock(tmp_path):
        pass
    _survives(stranger)


def test_a_stale_lock_still_kills_the_dead_holders_own_solve(tmp_path: Path) -> None:
    holder = CampaignLock(tmp_path)  # its solves carry its token (issue 66)
    solve = subprocess.Popen(["sleep", "600"], start_new_session=True,
                             env={**os.environ, lifeline.TOKEN_ENV: holder.token},
                             preexec_fn=dies_with_the_suite)
    try:
        stale = {**holder.data, "pid": 1, "identity": "1:0", "solve_pgid": solve.pid,
                 "solve_leader": lifeline.identity(solve.pid)}
        (tmp_path / LOCK).write_text(json.dumps(stale))
        with campaign_lock(tmp_path):
            assert solve.wait(timeout=60) == -signal.SIGKILL
    finally:
        solve.kill()
        solve.wait()


def test_a_campaign_run_that_finds_a_lock_naming_a_strangers_group_leaves_it_alone(
        local_campaign: Callable[..., str], write_campaign: Callable[..., Path],
        fake_env: Path, stranger: subprocess.Popen[bytes]) -> None:
    """The issue's reproduction end to end: ``setsid sleep``, a lock with a dead pid and the
    sleep's group, then a local campaign run: it completes, and the sleep lives."""
    spec = load_spec(write_campaign(local_campaign(nprocs="1", runs_ksp='["gmres"]')))
    _stale_lock_naming(spec.output, stranger.pid, None)
    outcome = run_campaign(spec, get_backend("local"))
    assert len(outcome.pending) == 1
    _survives(stranger)
