"""Temporary trace files name their writer; only a dead writer's are swept (issue 27)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ksptrace.trace import temporaries
from ksptrace.trace.temporaries import new_token, sweep, temp_path_for, writer_of


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_token_names_the_writer(tmp_path: Path) -> None:
    tmp = temp_path_for(tmp_path / ("x" * 203 + ".h5"))
    writer = writer_of(tmp)
    assert writer is not None
    assert writer.pid == os.getpid()
    assert writer.where == temporaries.here()
    assert len(tmp.name.encode()) <= 255 - 8  # a bounded stem (200) + .h5 and the token fit
    tmp.write_bytes(b"")


def test_dead_writers_file_is_removed_live_ones_kept(tmp_path: Path) -> None:
    dead = temp_path_for(tmp_path / "a.h5", new_token(pid=dead_pid()))
    live = temp_path_for(tmp_path / "b.h5")  # this process: alive
    for path in (dead, live):
        path.write_bytes(b"partial")
    assert sweep(tmp_path) == [dead]
    assert not dead.exists()
    assert live.exists()


def test_unknown_writers_are_kept_until_a_week_old(tmp_path: Path) -> None:
    old_style = tmp_path / ".a.h5.tmp-0123456789ab"  # no writer in the name
    elsewhere = tmp_path / f".b.h5.tmp-abcdef01-p{dead_pid()}-w0000000000"  # another host
    for path in (old_style, elsewhere):
        path.write_bytes(b"partial")
    assert sweep(tmp_path) == []
    week = time.time() - temporaries.ORPHAN_AGE_SECONDS - 60
    os.utime(old_style, (week, week))
    assert sweep(tmp_path) == [old_style]
    assert elsewhere.exists()


def test_links_folders_and_finished_traces_are_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_bytes(b"keep")
    link = temp_path_for(tmp_path / "a.h5", new_token(pid=dead_pid()))
    link.symlink_to(target)
    folder = temp_path_for(tmp_path / "b.h5", new_token(pid=dead_pid()))
    folder.mkdir()
    trace = tmp_path / "c.h5"
    trace.write_bytes(b"done")
    assert sweep(tmp_path) == []
    assert target.read_bytes() == b"keep"
    assert trace.exists()
    assert folder.is_dir()
