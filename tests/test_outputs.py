"""``ksptrace.outputs.staged_directory``: a results folder appears whole or not at all, and a
full disk, a read-only file system or a destination under a file is one OutputError line."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ksptrace.errors import OutputError
from ksptrace.outputs import MARKER, staged_directory


def _write(folder: Path, nbytes: int) -> None:
    (folder / "a.txt").write_text("first file\n")
    (folder / "big.bin").write_bytes(b"x" * nbytes)
    (folder / "summary.json").write_text("{}\n")


def _one_line(exc: OutputError) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_a_complete_folder_appears_and_replaces_an_earlier_one(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with staged_directory(out) as folder:
        assert not out.exists()  # nothing visible until complete
        _write(folder, 10)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "a.txt", "big.bin", "summary.json"]
    with staged_directory(out) as folder:
        (folder / "new.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_full_disk_is_one_line_and_leaves_nothing(
    mount_tmpfs: Callable[[str, str], Path],
) -> None:
    disk = mount_tmpfs("full", "size=64k")
    out = disk / "report"
    with pytest.raises(OutputError) as info, staged_directory(out) as folder:
        _write(folder, 1 << 20)
    line = _one_line(info.value)
    assert "no space left" in line
    assert str(out) in line
    assert list(disk.iterdir()) == []


def test_a_read_only_file_system_is_one_line(
    mount_tmpfs: Callable[[str, str], Path],
) -> None:
    disk = mount_tmpfs("ro", "size=1m")
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    with pytest.raises(OutputError) as info, staged_directory(disk / "report") as folder:
        _write(folder, 10)
    assert "read-only file system" in _one_line(info.value)
    assert list(disk.iterdir()) == []


@pytest.mark.parametrize("depth", [1, 3])
def test_a_destination_under_a_file_is_refused_before_any_work(
    tmp_path: Path, depth: int
) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("keep me")
    out = blocker.joinpath(*["sub"] * depth)
    entered = False
    with pytest.raises(OutputError, match="is a file, not a folder") as info, \
            staged_directory(out):
        entered = True
    assert not entered
    _one_line(info.value)
    assert blocker.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_an_earlier_report_is_kept_when_the_new_one_fails(
    mount_tmpfs: Callable[[str, str], Path],
) -> None:
    disk = mount_tmpfs("disk", "size=256k")
    out = disk / "report"
    with staged_directory(out) as folder:
        _write(folder, 1000)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with (disk / "filler").open("wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * (1 << 20))
    with pytest.raises(OutputError, match="no space left"), staged_directory(out) as folder:
        _write(folder, 200_000)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in disk.iterdir()) == ["filler", "report"]


def test_an_error_inside_leaves_nothing_and_passes_through(tmp_path: Path) -> None:
    out = tmp_path / "report"

    class Boom(Exception):
        pass

    def fail_midway() -> None:
        with staged_directory(out) as folder:
            _write(folder, 10)
            raise Boom

    with pytest.raises(Boom):
        fail_midway()
    assert list(tmp_path.iterdir()) == []


def test_a_symlinked_destination_leaves_no_stray_entry(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir()
    (target / "old.txt").write_text("old")
    (target / MARKER).write_text("")  # an earlier output
    link = tmp_path / "report"
    link.symlink_to(target)
    with staged_directory(link) as folder:
        (folder / "new.txt").write_text("new")
    assert (link / "new.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_folder_of_other_files_is_never_replaced(tmp_path: Path) -> None:
    """``analyze traces/*.h5 --out traces`` must not delete the traces."""
    from ksptrace.errors import UsageError

    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "run.h5").write_bytes(b"precious")
    with pytest.raises(UsageError, match="holding other files"), staged_directory(traces):
        pass
    assert (traces / "run.h5").read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]
    # An earlier output (its marker, or a file the caller names) is replaced whole.
    with staged_directory(tmp_path / "rep") as folder:
        (folder / "a.txt").write_text("1")
    with staged_directory(tmp_path / "rep") as folder:
        (folder / "b.txt").write_text("2")
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == [".ksptrace-output", "b.txt"]
    old = tmp_path / "old"
    old.mkdir()
    (old / "report.html").write_text("from an earlier version")
    with staged_directory(old, ("report.html",)) as folder:
        (folder / "report.html").write_text("new")
    assert (old / "report.html").read_text() == "new"
