"""The analysis' worker pools leave Ctrl-C to the parent, which stops them without a word."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from ksptrace.studies import workers

_SET: list[str] = []


def _mark() -> None:
    _SET.append("initialised")


def _state() -> tuple[Any, list[str], int]:
    return signal.getsignal(signal.SIGINT), list(_SET), os.getpid()


def test_workers_ignore_ctrl_c_and_run_the_pools_initializer(
        capfd: pytest.CaptureFixture[str]) -> None:
    with workers.forked_pool(1, _mark) as pool:
        handler, marks, pid = pool.submit(_state).result()
        assert handler == signal.SIG_IGN
        assert marks == ["initialised"]
        os.kill(pid, signal.SIGINT)  # what a terminal's Ctrl-C sends it, idle
        assert pool.submit(_state).result()[2] == pid  # still there, still working
    assert "Traceback" not in capfd.readouterr().err


def test_an_interrupted_block_kills_busy_workers_and_cancels_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    busy: list[Future[None]] = []
    pids: list[int] = []

    def interrupted() -> None:
        with workers.forked_pool(2) as pool:
            busy.extend(pool.submit(time.sleep, 300) for _ in range(5))  # two run, three wait
            pids.extend(p.pid for p in pool._processes.values())  # type: ignore[union-attr]
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert time.monotonic() - started < 120  # not the 300 s the work would take
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert raised == []  # no InvalidStateError from the pool's thread
    assert not any(f.cancelled() for f in busy)
