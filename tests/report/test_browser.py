"""The report in a real headless Chromium (Selenium): no console error, every image loads, no
sideways scrolling at 1400 px. The demo's own report is measured by tests/report/demo_page.py,
which README.md runs after ``make demo`` (the documentation test); here it is shown to fail
on each fault it looks for.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_analyze_real import real_traces
from tests.conftest import Runner
from tests.report import demo_page

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

WIDTH, HEIGHT = demo_page.WIDTH, 900


@pytest.fixture
def browser() -> Iterator[Any]:
    if (why := demo_page.available()) is not None:
        pytest.skip(why)
    with demo_page.chromium() as driver:
        driver.set_window_size(WIDTH, HEIGHT)
        yield driver


DOT = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWj"
                       "R9awAAAABJRU5ErkJggg==")
"""A 1 x 1 PNG."""


def _site(tmp_path: Path, body: str, run: str = '<img alt="a dot" src="dot.png">') -> Path:
    (tmp_path / "runs").mkdir(parents=True)
    (tmp_path / "runs" / "dot.png").write_bytes(DOT)
    (tmp_path / "runs" / "run-1.html").write_text(f"<html><body>{run}</body></html>")
    page = tmp_path / "report.html"
    page.write_text(f'<html><body>{body}<a href="runs/run-1.html">run</a></body></html>')
    return page


GOOD = ('<div class="sentences"><p>1 is a number.</p><p>So is 2.</p><p>And 3 %.</p></div>')


@pytest.mark.skipif(demo_page.available() is not None, reason=str(demo_page.available()))
def test_the_demo_page_check_passes_a_short_page_and_fails_each_fault(tmp_path: Path) -> None:
    """The check README.md runs on the demo's report (tests/report/demo_page.py) can fail: a
    page too tall, one without numbers up front, and a broken image on a run page are each
    named; a short page with three sentences with numbers passes."""
    good = _site(tmp_path / "good", GOOD)
    assert demo_page.check(good)[0] == []
    tall = _site(tmp_path / "tall", GOOD + '<div style="height: 13000px"></div>')
    assert any("px tall" in p for p in demo_page.check(tall)[0])
    words = _site(tmp_path / "words", '<div class="sentences"><p>no numbers</p></div>')
    assert any("sentences with numbers" in p for p in demo_page.check(words)[0])
    broken = _site(tmp_path / "broken", GOOD, run='<img alt="a figure" src="missing.png">')
    assert any("runs/run-1.html: broken image 'a figure'" in p
               for p in demo_page.check(broken)[0])


def test_real_report_renders_cleanly_in_chromium(
    ksptrace_cli: Runner, browser: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    made = real_traces(ksptrace_cli, tmp_path_factory.getbasetemp())
    files = [str(made[run]) for run in (("gmres", 1), ("gmres", 2), ("pipebcgs", 1),
                                        ("pipebcgs", 2), ("pgmres", 2))]
    out = tmp_path / "report"
    proc = ksptrace_cli("analyze", *files, "--out", str(out), "--single-file",
                        "--candidates", "johnsonsu,lognorm,norm", "--mc-runs", "4")
    assert proc.returncode == 0, proc.stderr
    page = demo_page.page_facts(browser, (out / "report.html").as_uri())
    assert (page["severe"], page["broken"], page["sideways"], page["wide"]) == ([], [], False, [])
    assert page["images"] >= 5
    assert page["inner"] == WIDTH
    # The run table, one row per run, starts within the first two screens.
    top, rows = browser.execute_script(
        "const t = document.querySelector('table.findings');"
        "return [t.getBoundingClientRect().top, t.tBodies[0].rows.length]")
    assert top < 2 * HEIGHT
    assert rows == len(files)
