"""Keeping solves tied to the process that launched them.

A solve is started (by ``ksptrace run --np`` or by the local campaign runner) in a process group
of its own, with Linux's parent-death signal set on its first process, so that

* a SIGINT/SIGTERM to the launcher ends the whole group (:func:`kill_group`);
* a launcher killed with SIGKILL takes its direct child with it, and a resumed campaign kills
  the rest of the dead runner's group before it starts anything (the campaign lock records it);
* whatever survives anyway cannot publish a trace: the launcher exports its identity
  (:data:`LAUNCHER_ENV`: pid and start time, which defeats pid reuse), and rank 0 checks it just
  before the atomic rename (:func:`check_launcher_alive`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from pathlib import Path

from ksptrace.errors import SolverError

LAUNCHER_ENV = "KSPTRACE_LAUNCHER"
"""``<pid>:<start time in clock ticks>`` of the process that launched this solve."""

PR_SET_PDEATHSIG = 1


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


def check_launcher_alive(env: dict[str, str] | None = None) -> None:
    """Raise SolverError when the launcher this solve belongs to has died (call before
    publishing a trace): a solve whose launcher is gone must not leave a trace behind."""
    ident = (os.environ if env is None else env).get(LAUNCHER_ENV, "")
    if ident and not is_alive(ident):
        raise SolverError(
            f"the process that launched this solve (pid {ident.partition(':')[0]}) has died; "
            "the trace is not published (rerun or resume the campaign)"
        )


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


def kill_descendants_of(ident: str, sig: int = signal.SIGKILL) -> int:
    """Signal every process whose environment names ``ident`` as its launcher (whatever its
    process group: an MPI library may regroup its ranks). Returns how many were signalled."""
    needle = f"{LAUNCHER_ENV}={ident}\0".encode()
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), sig)
                count += 1
    return count


class Supervised:
    """A child command in its own process group, dying with its parent, ended with its
    parent's SIGINT/SIGTERM. ``interrupted`` tells whether such a signal arrived."""

    def __init__(self) -> None:
        self.interrupted = False
        self.pid: int | None = None

    def _handler(self, signum: int, frame: object) -> None:
        self.interrupted = True
        if self.pid is not None:
            kill_group(self.pid, signal.SIGTERM)

    def run(self, cmd: list[str], env: dict[str, str], capture_stderr: bool = False,
            stdout: int | None = None, on_start: Callable[[int], None] | None = None
            ) -> tuple[int, str]:
        """Run ``cmd`` to its end (or until interrupted); returns (exit code, stderr text)."""
        import subprocess

        env = {**env, LAUNCHER_ENV: env.get(LAUNCHER_ENV) or identity()}
        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        for s in old:
            signal.signal(s, self._handler)
        try:
            proc = subprocess.Popen(
                cmd, env=env, stdout=stdout, text=True, start_new_session=True,
                stderr=subprocess.PIPE if capture_stderr else None,
                preexec_fn=child_setup(signal.SIGTERM),
            )
            self.pid = proc.pid
            if on_start is not None:
                on_start(proc.pid)
            if self.interrupted:
                kill_group(proc.pid, signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=None)
            finally:
                if self.interrupted:  # whatever is left of the group, and its descendants
                    kill_group(proc.pid, signal.SIGKILL)
                    kill_descendants_of(env[LAUNCHER_ENV])
            return proc.returncode, err or ""
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
