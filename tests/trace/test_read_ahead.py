"""A large first trace is read while the analysis is imported (read_ahead): the same trace, never
a stale one, and no child left behind (issue 35)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.errors import TraceError
from ksptrace.trace import read, reader_child, shared_read
from ksptrace.trace.model import Trace
from ksptrace.trace.read import read_ahead, read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace


@pytest.fixture(autouse=True)
def large(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every file counts as large here; no read is left over for the next test."""
    monkeypatch.setattr(reader_child, "SMALL_FILE", 0)
    yield
    read._abandon_all()


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children start_read forked."""
    pids: list[int] = []
    real = shared_read.start_read

    def counting(p: Path, file_bytes: int) -> shared_read.Started:
        s = real(p, file_bytes)
        pids.append(s.pid)
        return s

    monkeypatch.setattr(read, "start_read", counting)
    return pids


def _same(a: Trace, b: Trace) -> None:
    for name in ("stamps", "residual_norms", "node_ids", "solve_seconds"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.hostnames == b.hostnames
    assert dict(a.attrs) == dict(b.attrs)
    assert a.path == b.path


def _gone(pid: int) -> bool:
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped already: not our child any more
    return True


def test_a_read_started_ahead_gives_the_same_trace(tmp_path: Path, started: list[int]) -> None:
    path = write_trace(synthetic_trace(4, 50, 2, seed=1), tmp_path / "t.h5")
    alone = read_trace(path)
    assert len(started) == 0  # read_in_child's own fork, not start_read's
    read_ahead(path)
    assert len(started) == 1
    read_ahead(path)  # a second call does nothing
    assert len(started) == 1
    _same(read_trace(path), alone)
    assert read._AHEAD == {}  # taken
    assert _gone(started[0])


def test_a_file_changed_since_is_read_again(tmp_path: Path, started: list[int]) -> None:
    path = write_trace(synthetic_trace(4, 50, 2, seed=1), tmp_path / "t.h5")
    read_ahead(path)
    write_trace(synthetic_trace(4, 60, 2, seed=2), tmp_path / "new.h5").replace(path)
    got = read_trace(path)
    assert got.iterations == 60  # the file as it is now, not the one started
    assert len(read._AHEAD) == 1  # the stale read is left, stopped at exit
    read._abandon_all()
    assert read._AHEAD == {}
    assert _gone(started[0])


def test_a_read_nobody_takes_is_stopped_and_reaped(tmp_path: Path, started: list[int]) -> None:
    path = write_trace(synthetic_trace(4, 50, 2, seed=1), tmp_path / "t.h5")
    read_ahead(path)
    read._abandon_all()
    assert _gone(started[0])


def test_another_process_does_not_take_the_parents_read(
        tmp_path: Path, started: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(synthetic_trace(4, 50, 2, seed=1), tmp_path / "t.h5")
    read_ahead(path)
    monkeypatch.setattr(read.os, "getpid", lambda: -5)  # as a forked worker would see it
    _same(read_trace(path), read_trace(path))
    assert len(started) == 1
    monkeypatch.undo()
    read._abandon_all()
    assert _gone(started[0])


def test_small_missing_and_bad_files_are_left_to_read_trace(
        tmp_path: Path, started: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    read_ahead(tmp_path / "missing.h5")
    assert started == []
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "missing.h5")
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all" * 1000)
    with pytest.raises(TraceError) as alone:
        read_trace(bad)
    read_ahead(bad)
    assert len(started) == 1
    with pytest.raises(TraceError) as ahead:
        read_trace(bad)
    assert str(ahead.value) == str(alone.value)
    monkeypatch.setattr(reader_child, "SMALL_FILE", 1 << 40)
    read_ahead(write_trace(synthetic_trace(2, 20, 1, seed=3), tmp_path / "small.h5"))
    assert len(started) == 1


@pytest.mark.parametrize(("jobs", "ahead"), [("1", True), ("2", False)])
def test_analyze_reads_the_first_trace_ahead_with_one_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str, ahead: bool) -> None:
    paths = [str(write_trace(synthetic_trace(2, 30, 1, seed=i), tmp_path / f"t{i}.h5"))
             for i in range(2)]
    asked: list[str] = []
    monkeypatch.setattr(read, "read_ahead", lambda p: asked.append(str(p)))
    code = main(["analyze", *paths, "--out", str(tmp_path / "r"), "--no-cache", "--quiet",
                 "--no-figures", "--jobs", jobs, "--mc-runs", "2", "--candidates", "norm"])
    assert code == 0
    assert asked == (paths[:1] if ahead else [])


def test_a_file_no_memory_can_be_mapped_for_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge file (a sparse one, say) whose map cannot be had: read_ahead does nothing, and
    read_trace refuses it with the reason instead of an OSError traceback (issue 50)."""
    path = write_trace(synthetic_trace(2, 20, 1, seed=1), tmp_path / "t.h5")

    def no_memory(*args: object) -> object:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(shared_read.mmap, "mmap", no_memory)
    read_ahead(path)
    assert not read._AHEAD
    with pytest.raises(TraceError, match=r"reading it needs .* GiB of memory, more than this "
                                         r"machine gives"):
        read_trace(path)
