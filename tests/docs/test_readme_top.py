"""The raw README opens with its two commands together, with no test-harness markup before or
between them (issue 67); the documentation test still runs the demo's line and checks its
report, and leaves out ``make test`` (tests/docs/harness.py: NOT_RUN, CHECKED)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.harness import as_tested

ROOT = Path(__file__).resolve().parents[2]


def _first_block(text: str) -> tuple[str, str]:
    """What comes before README.md's first fenced block, and that block."""
    found = re.search(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert found is not None, "README.md has no sh block"
    return text[: found.start()], found.group(1)


def test_the_readme_opens_with_the_demo_and_the_tests_together() -> None:
    text = (ROOT / "README.md").read_text()
    before, block = _first_block(text)
    assert before.strip() == "# ksptrace"
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert commands == ["make demo", "make test"]
    assert "<!--" not in text[: text.index("## A ten-line tour")]


def test_the_first_block_runs_the_demo_and_its_check_but_not_the_suite() -> None:
    _, block = _first_block((ROOT / "README.md").read_text())
    script, checks, reasons = as_tested(block)
    assert [line.split("#")[0].strip() for line in script.splitlines()] == ["make demo"]
    assert checks == [".venv/bin/python -m tests.report.demo_page demo-out/report/report.html"]
    assert reasons == ["make test is this test suite: it would run itself"]


def test_a_block_of_only_lines_not_run_runs_nothing() -> None:
    script, checks, reasons = as_tested("make test   # the suite\n")
    assert (script.strip(), checks) == ("", [])
    assert len(reasons) == 1
