"""The report of real harness traces in a real headless Chromium (Selenium): no console error,
every image loads, no sideways scrolling at 1400 px, and the findings on the first screen.

A screenshot is saved (never committed) as demo-out/report-screenshot.png when demo-out/ exists,
or where KSPTRACE_REPORT_SCREENSHOT says.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_analyze_real import real_traces
from tests.conftest import ROOT, Runner

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1400, 900


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium "
                    "chromium-driver; CI installs them)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ksptrace-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                 f"--window-size={WIDTH},{HEIGHT}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_window_size(WIDTH, HEIGHT)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _screenshot_path() -> Path | None:
    if env := os.environ.get("KSPTRACE_REPORT_SCREENSHOT"):
        return Path(env)
    demo = ROOT / "demo-out"
    return demo / "report-screenshot.png" if demo.is_dir() else None


def test_real_report_renders_cleanly_in_chromium(
    ksptrace_cli: Runner, browser: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    made = real_traces(ksptrace_cli, tmp_path_factory.getbasetemp())
    files = [str(made[run]) for run in (("gmres", 1), ("gmres", 2), ("pipebcgs", 1),
                                        ("pipebcgs", 2), ("pgmres", 2))]
    out = tmp_path / "report"
    proc = ksptrace_cli("analyze", *files, "--out", str(out), "--independent", "ranks",
                        "--candidates", "johnsonsu,lognorm,norm", "--mc-runs", "4")
    assert proc.returncode == 0, proc.stderr
    browser.get((out / "report.html").as_uri())
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == []
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])")
    assert len(images) >= 5
    broken = [alt for alt, complete, width in images if not (complete and width > 0)]
    assert broken == []
    scroll, inner = browser.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]")
    assert inner == WIDTH
    assert scroll <= inner, "the page scrolls sideways at 1400 px"
    # Nothing needs its own horizontal scrollbar either: every table fits the page.
    wide = browser.execute_script(
        "return Array.from(document.querySelectorAll('.scroll'))"
        ".filter(d => d.scrollWidth > d.clientWidth + 1).map(d => d.innerText.slice(0, 60))")
    assert wide == []
    # The findings table, one row per run, is on the first screen.
    top, rows = browser.execute_script(
        "const t = document.querySelector('table.findings');"
        "return [t.getBoundingClientRect().top, t.tBodies[0].rows.length]")
    assert top < HEIGHT / 2
    assert rows == len(files)
    if (shot := _screenshot_path()) is not None:
        shot.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(shot))
