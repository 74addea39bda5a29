"""One runner per campaign folder at a time.

The lock is a file in the campaign folder that appears whole: it is written under a private
name and hard-linked into place, so no runner ever reads a half-written lock and mistakes it for
a stale one. It holds the holder's pid, host, identity (pid and start time) and start time, and,
while a solve runs, the process group of that solve. A lock whose holder is dead (``kill -9``, a
reboot) is stale: the next runner kills whatever is left of the dead holder's solves, then takes
the lock over. It signals the recorded process group only while that group's leader is still the
process the holder started (same pid, same start time from ``/proc/<pid>/stat``): a group number
reused since (by a reboot, by another user's job) is never signalled; the processes whose
environment names the dead holder as their launcher are ended either way. Looking at a lock and
taking it over happen under ``flock`` on the campaign folder itself (no extra file), so two
runners that both find a stale lock cannot both take it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ksptrace.errors import CampaignError
from ksptrace.harness import lifeline

LOCK = "campaign.lock"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # cut short by a kill between create and write: stale
    return data if isinstance(data, dict) else {}


def _holder_alive(data: dict[str, Any]) -> bool:
    if data.get("host") != socket.gethostname():
        return True  # another machine's runner: we cannot tell, so it holds
    ident = str(data.get("identity", ""))
    return bool(ident) and lifeline.is_alive(ident)


def _clean_up_after(data: dict[str, Any]) -> None:
    """Kill what a dead holder left running: its solve's process group, if its leader is still
    the process the holder started, and the processes that name the holder as their launcher."""
    pgid = data.get("solve_pgid")
    if isinstance(pgid, int) and pgid > 1 and _still_the_solve(pgid, data.get("solve_leader")):
        lifeline.kill_group(pgid)
    ident = data.get("identity")
    if isinstance(ident, str) and ident:
        lifeline.kill_descendants_of(ident)


def _still_the_solve(pgid: int, leader: object) -> bool:
    """Whether process group ``pgid`` is still led by the solve recorded as ``leader``
    (``<pid>:<start time>``, :func:`lifeline.identity`); a lock without one cannot tell."""
    if not isinstance(leader, str):
        return False
    pid, _, started = leader.partition(":")
    if pid != str(pgid) or not started.isdigit():
        return False
    try:
        if os.getpgid(pgid) != pgid:
            return False  # no longer a group leader
    except OSError:
        return False
    return lifeline.start_time(pgid) == started


class CampaignLock:
    """The lock of one campaign folder, held by this process."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self.data: dict[str, Any] = {
            "pid": os.getpid(), "host": socket.gethostname(),
            "identity": lifeline.identity(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "solve_pgid": None,
            "solve_leader": None,
        }

    def acquire(self) -> None:
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        mine = folder / f".{LOCK}.new-{os.getpid()}"
        mine.write_text(json.dumps(self.data))
        try:
            with _guard(folder):
                _sweep_private(folder)
                self._take(mine)
        finally:
            mine.unlink(missing_ok=True)

    def _take(self, mine: Path) -> None:
        for _ in range(3):
            try:
                os.link(mine, self.path)
                return
            except FileExistsError:
                pass
            held = _read(self.path)
            if held is None:
                continue  # released meanwhile: try again
            if held and _holder_alive(held):
                raise CampaignError(
                    f"{self.path.parent} is being run by pid {held.get('pid')} on "
                    f"{held.get('host')} since {held.get('started')}; wait for it, or stop "
                    "it (Ctrl-C) and rerun to resume"
                ) from None
            _clean_up_after(held)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        raise CampaignError(f"{self.path}: cannot take the campaign lock; rerun")

    def record_solve(self, pgid: int | None) -> None:
        """Write down the process group of the solve now running (None when none runs), and
        the identity of its leader (pid and start time), so that only that group is ever
        signalled by a runner that finds this lock stale."""
        self.data["solve_pgid"] = pgid
        self.data["solve_leader"] = None if pgid is None else lifeline.identity(pgid)
        tmp = self.path.with_name(f".{LOCK}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)

    def release(self) -> None:
        folder = self.path.parent
        if not folder.is_dir():
            return  # removed while held (a rejected first submission): nothing to release
        with _guard(folder):
            held = _read(self.path)
            if held is not None and held.get("identity") == self.data["identity"]:
                self.path.unlink(missing_ok=True)


def _sweep_private(folder: Path) -> None:
    """Remove the private lock files of runners killed mid-write (their pid is gone)."""
    for leftover in folder.glob(f".{LOCK}.*-*"):
        pid = leftover.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def _guard(folder: Path) -> Iterator[None]:
    """Hold ``flock`` on the campaign folder (a directory can be locked like a file)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise CampaignError(f"{folder}: cannot open the campaign folder ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def campaign_lock(folder: Path) -> Iterator[CampaignLock]:
    lock = CampaignLock(folder)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()
