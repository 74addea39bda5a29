"""One reader child for many small trace files: the same traces, the same refusals, one fork."""

from __future__ import annotations

import os
import pickle
import signal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.trace import probe, reader_child
from ksptrace.trace.read import read_trace
from ksptrace.trace.reader_child import reading
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    return [write_trace(synthetic_trace(2, 20 + i, 1, "cg", seed=i), tmp_path / f"t{i}.h5")
            for i in range(5)]


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The reader children started (their pids)."""
    started: list[int] = []
    real = reader_child._Reader._start

    def counting(self: reader_child._Reader) -> None:
        real(self)
        started.append(self.pid)

    monkeypatch.setattr(reader_child._Reader, "_start", counting)
    return started


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False

def _fail_on(monkeypatch: pytest.MonkeyPatch, name: str, fail: Callable[[], object]) -> None:
    """Make the reader child's read of the file called ``name`` crash or hang (``fail``)."""
    real = reader_child.read_fields

    def read_fields(p: Path, file_bytes: int) -> object:
        if p.name == name:
            fail()
        return real(p, file_bytes)

    monkeypatch.setattr(reader_child, "read_fields", read_fields)


def _segfault() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def _hang() -> None:
    time.sleep(120)


def _same(a: object, b: object) -> None:
    for field in ("stamps", "residual_norms", "node_ids", "solve_seconds"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))



def test_many_files_one_child_the_same_traces(files: list[Path], forks: list[int]) -> None:
    alone = [read_trace(p) for p in files]
    assert forks == []  # outside the block: a child per file, shared_read's own
    with reading():
        inside = [read_trace(p) for p in files]
    assert len(forks) == 1
    for a, b in zip(alone, inside, strict=True):
        _same(a, b)
        assert a.hostnames == b.hostnames
        assert dict(a.attrs) == dict(b.attrs)
        assert a.path == b.path
    assert _gone(forks[0]), "the reader child outlived its block"


@pytest.mark.parametrize("ahead", [False, True], ids=["asked-in-turn", "read-ahead"])
def test_a_crash_refuses_that_file_and_the_next_gets_a_new_child(
    files: list[Path], forks: list[int], monkeypatch: pytest.MonkeyPatch, ahead: bool,
) -> None:
    """Read ahead (the crash happens while t1 is analysed) or in turn, the file is refused
    when its turn comes, with the crash named."""
    _fail_on(monkeypatch, "t2.h5", _segfault)
    with reading([str(p) for p in files] if ahead else ()):
        read_trace(files[1])
        with pytest.raises(TraceError, match=r"HDF5 library crashed reading it \(signal 11\)"
                           ) as info:
            read_trace(files[2])
        assert str(info.value).startswith(f"{files[2]}: ")
        assert read_trace(files[3]).nprocs == 2
    assert len(forks) == 2
    assert all(_gone(pid) for pid in forks)


def test_a_hang_is_killed_at_the_limit(
    files: list[Path], forks: list[int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fail_on(monkeypatch, "t0.h5", _hang)
    monkeypatch.setattr(probe, "limit_for", lambda file_bytes: 1.0)
    with reading():
        start = time.monotonic()
        with pytest.raises(TraceError, match="did not finish within 1 s"):
            read_trace(files[0])
        assert time.monotonic() - start < 60
        assert _gone(forks[0])
        assert read_trace(files[1]).nprocs == 2


def test_a_hung_child_ends_itself_by_its_alarm(
    files: list[Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Even with no parent to kill it, a read past its limit ends the child (SIGALRM)."""
    monkeypatch.setattr(reader_child, "read_fields", lambda p, b: time.sleep(120))
    r = reader_child._Reader()
    r._start()
    try:
        reader_child._send(r.requests, pickle.dumps((str(files[0]), 1, 0.5)))
        status = None
        deadline = time.monotonic() + 60
        while status is None and time.monotonic() < deadline:
            done, st = os.waitpid(r.pid, os.WNOHANG)
            status = st if done else None
            time.sleep(0.05)
        assert status is not None, "the child did not end within 60 s"
        assert os.WIFSIGNALED(status)
        assert os.WTERMSIG(status) == signal.SIGALRM
    finally:
        os.close(r.requests)
        os.close(r.replies)


def test_refusals_are_those_of_the_one_file_reader(tmp_path: Path) -> None:
    garbage = tmp_path / "g.h5"
    garbage.write_bytes(b"not an HDF5 file" * 100)
    with pytest.raises(TraceError) as alone:
        read_trace(garbage)
    with reading(), pytest.raises(TraceError) as inside:
        read_trace(garbage)
    assert str(inside.value) == str(alone.value)


def test_an_unexpected_fault_goes_to_the_one_file_reader(
    files: list[Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(p: Path, file_bytes: int) -> object:
        raise RuntimeError("a fault nobody expected")

    monkeypatch.setattr(reader_child, "read_fields", broken)
    with reading():
        trace = read_trace(files[0])  # read again by shared_read's own child
    np.testing.assert_array_equal(trace.stamps, read_trace(files[0]).stamps)


def test_large_files_keep_a_child_of_their_own(
    files: list[Path], forks: list[int], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reader_child, "SMALL_FILE", 0)
    with reading():
        read_trace(files[0])
    assert forks == []


def test_ctrl_c_is_the_parents_and_a_forked_process_has_no_reader(files: list[Path]) -> None:
    with reading():
        read_trace(files[0])
        pid = reader_child.reader().pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGINT)  # ignored by the child
        time.sleep(0.2)
        assert read_trace(files[1]).nprocs == 2
        child = os.fork()
        if child == 0:
            os._exit(0 if reader_child.reader() is None else 1)
        _, status = os.waitpid(child, 0)
        assert os.WEXITSTATUS(status) == 0


def _read_in_worker(path: str) -> tuple[int, int]:
    trace = read_trace(path)
    return trace.nprocs, reader_child.reader().pid  # type: ignore[union-attr]


def test_pool_workers_read_through_their_own_child_and_take_it_with_them(
    files: list[Path],
) -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(2, mp_context=get_context("fork"),
                             initializer=reader_child.keep_reading) as pool:
        got = list(pool.map(_read_in_worker, [str(p) for p in files]))
    assert [n for n, _ in got] == [2] * len(files)
    readers = {pid for _, pid in got}
    assert 1 <= len(readers) <= 2  # one per worker, each used for several files
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in readers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in readers), "a reader child outlived its worker"


def test_iter_traces_reads_through_one_child_and_closes_it_when_left(
    files: list[Path], forks: list[int],
) -> None:
    from ksptrace.trace.read import iter_traces

    assert [t.nprocs for t in iter_traces(files)] == [2] * len(files)  # type: ignore[union-attr]
    assert len(forks) == 1
    assert _gone(forks[0])
    walk = iter_traces(files)
    next(walk)
    walk.close()  # a caller that stops early
    assert len(forks) == 2
    assert _gone(forks[1])


def test_the_child_reads_the_next_expected_file_ahead(files: list[Path], forks: list[int]
                                                      ) -> None:
    alone = [read_trace(p) for p in files]
    with reading([str(p) for p in files]):
        r = reader_child.reader()
        assert r is not None
        assert r.asked is None
        got = []
        for i, p in enumerate(files):
            got.append(read_trace(p))
            if i + 1 < len(files):  # asked for the next one already
                assert r.asked is not None
                assert r.asked.key[0] == str(files[i + 1])
        assert r.asked is None  # nothing after the last
    assert len(forks) == 1
    assert _gone(forks[0])
    for a, b in zip(alone, got, strict=True):
        _same(a, b)


def test_a_file_changed_after_it_was_asked_for_is_read_again(tmp_path: Path, files: list[Path]
                                                             ) -> None:
    with reading([str(p) for p in files]):
        read_trace(files[0])  # the child now reads files[1] ahead
        replaced = synthetic_trace(3, 25, 1, "gmres", seed=7)
        write_trace(replaced, tmp_path / "new.h5")
        os.replace(tmp_path / "new.h5", files[1])
        trace = read_trace(files[1])
    assert trace.nprocs == 3
    _same(trace, read_trace(files[1]))


def test_files_read_out_of_the_expected_order_are_still_the_right_ones(
    files: list[Path], forks: list[int],
) -> None:
    alone = {p: read_trace(p) for p in files}
    order = [files[0], files[2], files[1], files[4]]  # files[1] was asked for, then skipped
    with reading([str(p) for p in files]):
        got = [(p, read_trace(p)) for p in order]
    assert len(forks) == 1
    for p, trace in got:
        assert trace.path == str(p)
        _same(alone[p], trace)


def test_a_hang_on_a_file_read_ahead_is_named_a_hang(
    files: list[Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fail_on(monkeypatch, "t1.h5", _hang)
    monkeypatch.setattr(probe, "limit_for", lambda file_bytes: 1.0)
    with reading([str(p) for p in files]):
        read_trace(files[0])
        time.sleep(3)  # the child ends itself by its alarm meanwhile (1 s limit + 1)
        start = time.monotonic()
        with pytest.raises(TraceError, match="did not finish within 1 s"):
            read_trace(files[1])
        assert time.monotonic() - start < 60
        assert read_trace(files[2]).nprocs == 2


def test_leaving_with_a_file_asked_for_leaves_no_process(files: list[Path], forks: list[int]
                                                         ) -> None:
    with reading([str(p) for p in files]):
        read_trace(files[0])
    assert len(forks) == 1
    assert _gone(forks[0])
