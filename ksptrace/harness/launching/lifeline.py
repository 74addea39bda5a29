"""Keeping solves tied to the process that launched them.

A solve is started (by ``ksptrace run --np`` or by the local campaign runner) in a process group
of its own, with Linux's parent-death signal set on its first process, so that

* a SIGINT/SIGTERM to the launcher ends the whole group (:func:`kill_group`);
* a launcher killed with SIGKILL takes its direct child with it, and a resumed campaign kills
  the rest of the dead runner's group before it starts anything (the campaign lock records it);
* whatever survives anyway (mpiexec and the ranks below the launcher's dead child) stops
  within about a second: the launcher exports its identity (:data:`LAUNCHER_ENV`: pid and start
  time, which defeats pid reuse) and its host (:data:`LAUNCHER_HOST_ENV`), and every rank runs a
  watchdog thread (:func:`start_watchdog`) that polls the launcher and ends the rank with
  SolverError's exit code once it is gone; mpiexec then ends with its ranks;
* and it cannot publish a trace: rank 0 checks the launcher just before the atomic rename
  (:func:`check_launcher_alive`), which also covers a launcher that dies after the last poll.

A launcher on another host (an MPI library that forwards the whole environment to remote ranks)
is not ours to judge: neither the watchdog nor the check acts on it. Without the host (an
identity set by hand), the watchdog starts only if the launcher is visible when the rank starts.
The watchdog runs between Python bytecodes, so a rank inside one long C call that neither returns
to Python nor releases the GIL is stopped only when that call returns (a traced KSPSolve lets
Python in every 50 ms from the C stamping monitor, at every iteration from the Python one); a
rank started in another pid namespace under the same host name would be misjudged as orphaned.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ksptrace.errors import SolverError

LAUNCHER_ENV = "KSPTRACE_LAUNCHER"
"""``<pid>:<start time in clock ticks>`` of the process that launched this solve."""

LAUNCHER_HOST_ENV = "KSPTRACE_LAUNCHER_HOST"
"""The host name of the process named by :data:`LAUNCHER_ENV` (its pid means nothing elsewhere)."""

TOKEN_ENV = "KSPTRACE_SOLVE_TOKEN"
"""A secret the campaign runner puts in its solves' environment (and in its private lock): a
process proves it was started by that runner by carrying it in ``/proc/<pid>/environ``, which
only its own user (and root) can read."""

PR_SET_PDEATHSIG = 1

_watchdog: threading.Thread | None = None


def start_time(pid: int) -> str | None:
    """The start time of ``pid`` from /proc (clock ticks since boot), or None when it is gone
    or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if not fields or fields[0] == "Z":
        return None
    return fields[19] if len(fields) > 19 else None


def identity(pid: int | None = None) -> str:
    """This process's (or ``pid``'s) identity, as exported in :data:`LAUNCHER_ENV`."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{start_time(pid) or '?'}"


def is_alive(ident: str) -> bool:
    """Whether the process named by ``identity`` still runs (same pid, same start time)."""
    pid, _, started = ident.partition(":")
    if not pid.isdigit():
        return True  # not ours to judge
    now = start_time(int(pid))
    return now is not None and (started in ("", "?") or now == started)


def boot_id() -> str:
    """This boot's id (Linux's random ``boot_id``), or '' where there is none: a pid and start
    time name one process only within one boot."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _real_uid(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("Uid:"):
            fields = line.split()
            return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return None


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""  # another user's process (or gone): it proves nothing


def carries_token(pid: int, token: str) -> bool:
    """Whether ``pid`` is a process of this user whose environment holds :data:`TOKEN_ENV` =
    ``token``: proof that this user's runner started it (a token of at least 16 characters)."""
    if len(token) < 16 or _real_uid(pid) != os.geteuid():
        return False
    return f"\0{TOKEN_ENV}={token}\0".encode() in b"\0" + _environ(pid)


def _launcher_here(env: Mapping[str, str] | None) -> str:
    """The launcher identity of ``env`` (default: this process's environment) when it names a
    process on this host, else ''."""
    env = os.environ if env is None else env
    host = env.get(LAUNCHER_HOST_ENV, "")
    if host and host != socket.gethostname():
        return ""  # another machine's pid: not ours to judge
    return env.get(LAUNCHER_ENV, "")


def check_launcher_alive(env: Mapping[str, str] | None = None) -> None:
    """Raise SolverError when the launcher this solve belongs to has died (call before
    publishing a trace): a solve whose launcher is gone must not leave a trace behind."""
    ident = _launcher_here(env)
    if ident and not is_alive(ident):
        raise SolverError(
            f"the process that launched this solve (pid {ident.partition(':')[0]}) has died; "
            "the trace is not published (rerun or resume the campaign)"
        )


def _watch(ident: str, interval: float) -> None:
    while is_alive(ident):
        time.sleep(interval)
    pid = ident.partition(":")[0]
    with contextlib.suppress(OSError):
        os.write(2, f"ksptrace: the process that launched this solve (pid {pid}) has died; "
                    "stopping this rank\n".encode())
    os._exit(SolverError.exit_code)


def start_watchdog(env: Mapping[str, str] | None = None,
                   interval: float = 0.5) -> threading.Thread | None:
    """Start, once per process, a daemon thread that ends this process (stderr line, exit code
    of SolverError, no cleanup: ``os._exit``) within ``interval`` seconds of its launcher's death.

    Call it first thing in a rank: an orphaned solve then stops instead of running to the end of
    its solve on cores that other measurements use. Returns the thread, or None when there is
    nothing to watch: no :data:`LAUNCHER_ENV`, an identity that is not ours to judge (not a pid,
    another host), or, when the launcher's host is not given, a launcher already invisible from
    here (another host or pid namespace looks the same as dead). The thread sleeps between polls
    (one read of /proc each) and never touches MPI.
    """
    global _watchdog
    if _watchdog is not None:
        return _watchdog
    env = os.environ if env is None else env
    ident = _launcher_here(env)
    pid = ident.partition(":")[0]
    if not pid.isdigit():
        return None
    if not env.get(LAUNCHER_HOST_ENV) and not is_alive(ident):
        return None
    thread = threading.Thread(target=_watch, args=(ident, interval), daemon=True,
                              name="ksptrace-lifeline")
    thread.start()
    _watchdog = thread
    return thread


def _set_parent_death_signal(sig: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def child_setup(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn``: the child dies with ``sig`` when its parent dies."""

    def setup() -> None:
        _set_parent_death_signal(sig)

    return setup


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def launched_by(ident: str, token: str | None = None, variable: str = LAUNCHER_ENV
                ) -> list[int]:
    """Pids of the processes (this one aside) whose environment names ``ident`` as their
    launcher (in ``variable``), whatever their process group; with ``token``, only those of
    this user that also carry it (:func:`carries_token`)."""
    needle = f"\0{variable}={ident}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        if needle in b"\0" + _environ(int(entry.name)) and (
                token is None or carries_token(int(entry.name), token)):
            found.append(int(entry.name))
    return found


def kill_descendants_of(ident: str, sig: int = signal.SIGKILL, token: str | None = None,
                        variable: str = LAUNCHER_ENV) -> int:
    """Signal every process whose environment names ``ident`` as its launcher (in ``variable``;
    whatever its process group: an MPI library may regroup its ranks), and carries ``token``
    when given. Returns how many were signalled."""
    count = 0
    for pid in launched_by(ident, token, variable):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            count += 1
    return count


class Supervised:
    """A child command in its own process group, dying with its parent, ended with its
    parent's SIGINT/SIGTERM (those not ignored: a background job started with SIGINT ignored
    keeps ignoring it). ``interrupted`` tells whether such a signal arrived."""

    def __init__(self) -> None:
        self.interrupted = False
        self.timed_out = False
        self.pid: int | None = None

    def _handler(self, signum: int, frame: object) -> None:
        self.interrupted = True
        if self.pid is not None:
            kill_group(self.pid, signal.SIGTERM)

    def run(self, cmd: list[str], env: dict[str, str], capture_stderr: bool = False,
            stdout: int | None = None, on_start: Callable[[int], None] | None = None,
            timeout: float | None = None, stderr: int | None = None) -> tuple[int, str]:
        """Run ``cmd`` to its end (or until interrupted, or ``timeout`` seconds: then its group
        and descendants are killed and ``timed_out`` is set); returns (exit code, stderr).
        ``stderr``, a file descriptor, receives the command's stderr when it is not captured."""
        import subprocess

        if not env.get(LAUNCHER_ENV):  # an inherited launcher (a campaign's) stays
            env = {**env, LAUNCHER_ENV: identity(), LAUNCHER_HOST_ENV: socket.gethostname()}
        # SIGINT inherited as ignored (a background job of a script) stays ignored
        watched = [s for s in (signal.SIGINT, signal.SIGTERM)
                   if signal.getsignal(s) != signal.SIG_IGN]
        old = {s: signal.getsignal(s) for s in watched}
        for s in old:
            signal.signal(s, self._handler)
        try:
            proc = subprocess.Popen(
                cmd, env=env, stdout=stdout, text=True, start_new_session=True,
                stderr=subprocess.PIPE if capture_stderr else stderr,
                preexec_fn=child_setup(signal.SIGTERM),
            )
            self.pid = proc.pid
            if on_start is not None:
                on_start(proc.pid)
            if self.interrupted:
                kill_group(proc.pid, signal.SIGTERM)
            try:
                try:
                    _, err = proc.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:  # a hung launcher (mpiexec) never ends
                    self.timed_out = True
                    kill_group(proc.pid, signal.SIGTERM)
                    try:
                        _, err = proc.communicate(timeout=5.0)
                    except subprocess.TimeoutExpired:
                        kill_group(proc.pid, signal.SIGKILL)
                        _, err = proc.communicate()
            finally:
                if self.interrupted or self.timed_out:  # the rest of the group, descendants
                    kill_group(proc.pid, signal.SIGKILL)
                    kill_descendants_of(env[LAUNCHER_ENV])
            return proc.returncode, err or ""
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
