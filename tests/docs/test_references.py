"""Every file the documentation names exists, and every test it names is defined (issue 31:
docs that cannot drift). A path is a backticked ``ksptrace/``, ``tests/``, ``scripts/``,
``bench/``, ``examples/`` or ``docs/`` name; ``file.py::test_name`` names a test in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
REFERENCE = re.compile(r"`((?:ksptrace|tests|scripts|bench|examples|docs)/[\w./-]+?)"
                       r"(?:::(\w+))?(?:[ `(])")


def references(text: str) -> list[tuple[str, str | None]]:
    return [(m.group(1).rstrip("."), m.group(2)) for m in REFERENCE.finditer(text)]


def test_the_pattern_finds_paths_and_tests() -> None:
    text = "see `ksptrace/trace/io.py` and `tests/x/test_a.py::test_b` and `ksptrace run`"
    assert references(text) == [("ksptrace/trace/io.py", None), ("tests/x/test_a.py", "test_b")]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_named_files_and_tests_exist(document: Path) -> None:
    missing = []
    for path, test in references(document.read_text()):
        if any(ch in path for ch in "*<{"):
            continue
        target = ROOT / path
        if not target.exists() and not target.with_suffix("").exists():
            missing.append(path)
        elif test and not re.search(rf"^\s*def {test}\(", target.read_text(), re.MULTILINE):
            missing.append(f"{path}::{test}")
    assert not missing, f"{document.name} names what does not exist: {', '.join(missing)}"
