"""The whole-suite git status check (conftest.py) sees what a run leaves in a clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.docs import cleanliness


def _repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("/demo-out/\n")
    (tmp_path / "kept.txt").write_text("kept\n")
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   cwd=tmp_path, check=True)
    return tmp_path


def test_a_new_file_and_a_changed_one_are_left_behind(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = cleanliness.status(repo)
    (repo / "stray.h5").write_text("x")
    (repo / "kept.txt").write_text("changed\n")
    assert cleanliness.left_behind(before, cleanliness.status(repo)) == [" M kept.txt",
                                                                         "?? stray.h5"]


def test_ignored_output_and_what_was_there_before_are_not(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "mine.txt").write_text("a file of the developer's, there before the run")
    before = cleanliness.status(repo)
    (repo / "demo-out").mkdir()
    (repo / "demo-out" / "report.html").write_text("x")
    assert cleanliness.left_behind(before, cleanliness.status(repo)) == []


def test_outside_a_checkout_there_is_nothing_to_compare(tmp_path: Path) -> None:
    assert cleanliness.status(tmp_path) is None
    assert cleanliness.left_behind(None, {"?? x"}) == []
