"""``make test`` leaves ``git status`` as it found it (issue 31): the root conftest.py compares
the clone's status before and after a whole-suite run and fails the run on what was added."""

from __future__ import annotations

import subprocess
from pathlib import Path


def status(root: Path) -> set[str] | None:
    """``git status --porcelain`` of ``root`` as a set of lines; None outside a git checkout."""
    try:
        proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                              cwd=root, capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return set(proc.stdout.splitlines())


def left_behind(before: set[str] | None, after: set[str] | None) -> list[str]:
    """The status lines the run added (new files, newly changed ones), sorted."""
    if before is None or after is None:
        return []
    return sorted(after - before)
