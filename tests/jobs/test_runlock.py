"""The campaign lock under races: many processes reaching for one folder at the same moment.

Each round, every racer tries to take the lock, then all wait at a barrier before a winner lets
go, so the count of winners is a state, not a timing: it must be exactly one.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import shutil
import socket
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from ksptrace.errors import CampaignError
from ksptrace.jobs.runlock import LOCK, CampaignLock, campaign_lock

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
