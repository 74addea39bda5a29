"""One runner per campaign folder at a time.

The lock is a file in the campaign folder that appears whole: it is written under a private
name (created new, never through a link, mode 600) and hard-linked into place, so no runner ever
reads a half-written lock and mistakes it for a stale one. It holds the holder's pid, host, boot
id, identity (pid and start time) and start time, a secret token, and, while a solve runs, the
process group of that solve. The runner puts the token in each solve's environment.

A lock whose holder is dead (``kill -9``, a reboot) is stale: the next runner ends whatever is
left of the dead holder's solves, then takes the lock over. It signals only what it can prove
this user's runner started: the lock must be this user's own regular file, written in this boot,
and each process signalled must be this user's and carry the lock's token in its environment
(``/proc/<pid>/environ``, which no other user can read): the recorded group only while its
leader is still the process the holder started (same pid and start time) and carries the token;
otherwise the processes that name the dead holder as their launcher and carry the token. Pids,
start times and group numbers are public, so a lock written by anyone else (another user, a
copy) names nothing that gets signalled; an old lock without a token neither (its orphaned ranks
stop by themselves, :mod:`ksptrace.harness.launching.lifeline`).

The lock is opened without following links and without blocking, and read only when it is a
regular file of at most :data:`MAX_BYTES`: a link, a FIFO or a device in its place is refused
with one line. Looking at a lock and taking it over happen under ``flock`` on the campaign
folder itself (no extra file), so two runners that both find a stale lock cannot both take it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksptrace.errors import CampaignError
from ksptrace.harness.launching import lifeline

LOCK = "campaign.lock"
MAX_BYTES = 64 * 1024
"""A lock is a few hundred bytes; a bigger file is not one ksptrace wrote (read as garbled)."""


@dataclass(frozen=True)
class Held:
    """What a lock file says, and whether this user wrote it (only then is it believed)."""

    data: dict[str, Any]
    mine: bool


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _not_a_lock(path: Path, what: str) -> CampaignError:
    return CampaignError(f"{path} is {what}, not a lock ksptrace wrote; remove it "
                         "(rm) and rerun")


def _read(path: Path) -> Held | None:
    """The lock at ``path`` (None when there is none); a garbled or oversized one reads as
    empty (stale). A link or a special file in its place raises CampaignError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_a_lock(path, "a symbolic link") from None
        return Held({}, mine=False)  # unreadable: stale, and nothing it says is believed
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_a_lock(path, _kind(st.st_mode))
        mine = st.st_uid == os.geteuid()
        if st.st_size > MAX_BYTES:
            return Held({}, mine)
        raw = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return Held({}, mine=False)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
    except ValueError:
        return Held({}, mine)  # cut short by a kill between create and write: stale
    return Held(data if isinstance(data, dict) else {}, mine)


def _write_private(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to a new file ``path`` of this user alone, never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # a leftover of a reused pid, or a planted name: replace it
        path.unlink()
        fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
    finally:
        os.close(fd)


def _holder_alive(data: dict[str, Any]) -> bool:
    if data.get("host") != socket.gethostname():
        return True  # another machine's runner: we cannot tell, so it holds
    boot = data.get("boot_id")
    if isinstance(boot, str) and boot and boot != lifeline.boot_id():
        return False  # written before this machine's last boot
    ident = str(data.get("identity", ""))
    return bool(ident) and lifeline.is_alive(ident)


def _clean_up_after(held: Held) -> None:
    """Kill what a dead holder left running, and only what this user's runner provably started
    (module docstring): its solve's process group, if its leader is still the process the
    holder started, and the processes that name the holder as their launcher."""
    data = held.data
    token = data.get("token")
    if not held.mine or not isinstance(token, str) or len(token) < 16:
        return  # not this user's lock, or one written before tokens: nothing is provable
    if data.get("boot_id") != lifeline.boot_id() or not lifeline.boot_id():
        return  # another boot's pids
    pgid = data.get("solve_pgid")
    if isinstance(pgid, int) and pgid > 1 and _still_the_solve(pgid, data.get("solve_leader"),
                                                                token):
        lifeline.kill_group(pgid)
    ident = data.get("identity")
    if isinstance(ident, str) and ident:
        lifeline.kill_descendants_of(ident, token=token)


def _still_the_solve(pgid: int, leader: object, token: str) -> bool:
    """Whether process group ``pgid`` is still led by the solve recorded as ``leader``
    (``<pid>:<start time>``, :func:`lifeline.identity`) and that leader carries ``token``; a
    lock without a leader cannot tell."""
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
    return lifeline.start_time(pgid) == started and lifeline.carries_token(pgid, token)


class CampaignLock:
    """The lock of one campaign folder, held by this process."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self.data: dict[str, Any] = {
            "pid": os.getpid(), "host": socket.gethostname(),
            "identity": lifeline.identity(),
            "boot_id": lifeline.boot_id(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "solve_pgid": None,
            "solve_leader": None, "token": secrets.token_hex(16),
        }

    @property
    def token(self) -> str:
        """The secret each solve carries in its environment (:data:`lifeline.TOKEN_ENV`)."""
        return str(self.data["token"])

    def acquire(self) -> None:
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        mine = folder / f".{LOCK}.new-{os.getpid()}"
        _write_private(mine, self.data)
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
            if held.data and _holder_alive(held.data):
                raise CampaignError(
                    f"{self.path.parent} is being run by pid {held.data.get('pid')} on "
                    f"{held.data.get('host')} since {held.data.get('started')}; wait for it, "
                    "or stop it (Ctrl-C) and rerun to resume"
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
        _write_private(tmp, self.data)
        os.replace(tmp, self.path)

    def release(self) -> None:
        folder = self.path.parent
        if not folder.is_dir():
            return  # removed while held (a rejected first submission): nothing to release
        with _guard(folder), contextlib.suppress(CampaignError):  # a link planted meanwhile
            held = _read(self.path)
            if held is not None and held.mine and held.data.get("token") == self.token:
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
