"""pytest finds the documentation's code blocks through this file (tests/docs/harness.py), and
a whole-suite run checks that it leaves the clone's git status as it found it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs import ahead, cleanliness
from tests.docs.harness import DOCS, start_early

ROOT = Path(__file__).resolve().parent
JOBS = ROOT / "tests" / "jobs"
pytest_collect_file = DOCS.pytest()
_STATUS: dict[str, set[str] | None] = {}


def _whole_suite(config: pytest.Config) -> bool:
    return bool(config.args_source == pytest.Config.ArgsSource.TESTPATHS)


def pytest_sessionstart(session: pytest.Session) -> None:
    if _whole_suite(session.config):
        _STATUS["before"] = cleanliness.status(ROOT)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if "before" not in _STATUS:
        return
    added = cleanliness.left_behind(_STATUS["before"], cleanliness.status(ROOT))
    if added:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("the test run left the clone's git status changed: "
                                + "; ".join(added[:20]), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The documents this run collected: only they run (tests/docs/ahead.py)."""
    ahead.SELECTED[:] = sorted({Path(str(item.path)) for item in items
                                if str(item.path).endswith(".md")})


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The collected documents start beside the tests of tests/jobs/, which mostly wait on
    Slurm's daemons and on killed runs: there the documents' solves cost the other tests least
    (tests/docs/ahead.py); else they start when pytest reaches their first block."""
    if ahead.SELECTED and JOBS in Path(str(item.path)).parents:
        start_early()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line with the documentation blocks run and skipped (issue 31)."""
    counts = dict.fromkeys(("passed", "failed", "skipped"), 0)
    for outcome in counts:
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if nodeid.split("::")[0].endswith(".md") and report.when in ("setup", "call"):
                counts[outcome] += outcome != "passed" or report.when == "call"
    if any(counts.values()):
        terminalreporter.write_line(
            f"documentation blocks: {counts['passed']} ran, {counts['failed']} failed, "
            f"{counts['skipped']} skipped (README.md and docs/*.md; tests/docs/harness.py)")
