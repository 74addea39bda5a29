"""The demo report as a reader's browser shows it (issue 30), in a real headless Chromium:

- the main page at most 12,000 px tall at 1400 px wide and at most 1.5 MB;
- its first 1000 px hold at least three sentences with numbers;
- it and every page it links to (runs/, studies/, across.html) load with no console error and
  no broken image, and none scrolls sideways.

``python -m tests.report.demo_page demo-out/report/report.html`` prints what fails and exits
1, or prints the measurements and exits 0; without Chromium it says so and exits 3. README.md
runs it right after ``make demo`` (``CHECKED`` in tests/docs/harness.py), so the demo's
own report is measured. A screenshot of the first screen goes to demo-out/ of the repository
when that folder exists (never committed), or where KSPTRACE_REPORT_SCREENSHOT says.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1400, 1000
MAX_HEIGHT, MAX_BYTES, FIRST_SCREEN, MIN_SENTENCES = 12_000, 1_500_000, 1000, 3
CANNOT_RUN = 3
ROOT = Path(__file__).resolve().parents[2]


def available() -> str | None:
    """Why the check cannot run here, or None."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return (f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium "
                "chromium-driver; the test bootstrap installs them)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium (apt-get install python3-selenium)"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    from selenium import webdriver
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


def page_facts(browser: Any, url: str) -> dict[str, Any]:
    """Load ``url``: its console errors, images, width, height and overflowing tables."""
    browser.get(url)
    severe = [e.get("message", "") for e in browser.get_log("browser")
              if e.get("level") == "SEVERE"]
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])")
    scroll, inner, height = browser.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth,"
        " document.documentElement.scrollHeight]")
    wide = browser.execute_script(
        "return Array.from(document.querySelectorAll('.scroll'))"
        ".filter(d => d.scrollWidth > d.clientWidth + 1).map(d => d.innerText.slice(0, 60))")
    return {"severe": severe, "images": len(images), "height": height, "inner": inner,
            "broken": [alt for alt, complete, width in images if not (complete and width > 0)],
            "sideways": scroll > inner, "wide": wide}


def _problems_of(name: str, facts: dict[str, Any]) -> list[str]:
    out = [f"{name}: console error {m}" for m in facts["severe"]]
    out += [f"{name}: broken image {alt!r}" for alt in facts["broken"]]
    if facts["sideways"]:
        out.append(f"{name}: scrolls sideways at {WIDTH} px")
    out += [f"{name}: a table wider than the page: {w!r}" for w in facts["wide"]]
    return out


def check(report: Path, screenshot: Path | None = None) -> tuple[list[str], dict[str, Any]]:
    """What fails in ``report`` (its main page and every page it links to), and the figures."""
    problems: list[str] = []
    size = report.stat().st_size
    if size > MAX_BYTES:
        problems.append(f"report.html is {size} bytes, more than {MAX_BYTES}")
    with chromium() as browser:
        main = page_facts(browser, report.resolve().as_uri())
        problems += _problems_of("report.html", main)
        if main["height"] > MAX_HEIGHT:
            problems.append(f"report.html is {main['height']} px tall at {WIDTH} px, more "
                            f"than {MAX_HEIGHT}")
        numbered = browser.execute_script(
            "return Array.from(document.querySelectorAll('.sentences p'))"
            f".filter(p => p.getBoundingClientRect().top < {FIRST_SCREEN}"
            " && /\\d/.test(p.innerText)).map(p => p.innerText)")
        if len(numbered) < MIN_SENTENCES:
            problems.append(f"the first {FIRST_SCREEN} px hold {len(numbered)} sentences with "
                            f"numbers, fewer than {MIN_SENTENCES}")
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(screenshot))
        links = browser.execute_script(
            "return Array.from(document.querySelectorAll('a[href]'))"
            ".map(a => a.getAttribute('href'))"
            ".filter(h => !h.startsWith('#') && !h.includes(':') && h.endsWith('.html'))")
        pages = sorted(set(links))
        for href in pages:
            target = report.parent / href
            if not target.is_file():
                problems.append(f"report.html links to {href}, which does not exist")
                continue
            facts = page_facts(browser, target.resolve().as_uri())
            problems += _problems_of(href, facts)
            if href.startswith("runs/") and facts["images"] < 1:
                problems.append(f"{href}: no figure")
    return problems, {"bytes": size, "height": main["height"], "sentences": len(numbered),
                      "pages": len(pages), "runs": sum(h.startswith("runs/") for h in pages)}


def _screenshot() -> Path | None:
    if env := os.environ.get("KSPTRACE_REPORT_SCREENSHOT"):
        return Path(env)
    demo = ROOT / "demo-out"
    return demo / "report-screenshot.png" if demo.is_dir() else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.report.demo_page REPORT_HTML", file=sys.stderr)
        return 2
    why = available()
    if why is not None:
        print(f"demo-page: cannot run here: {why}", file=sys.stderr)
        return CANNOT_RUN
    problems, facts = check(Path(argv[0]), _screenshot())
    print(f"{argv[0]}: {facts['bytes']} bytes, {facts['height']} px tall at {WIDTH} px, "
          f"{facts['sentences']} sentences with numbers in the first {FIRST_SCREEN} px, "
          f"{facts['pages']} linked pages ({facts['runs']} runs) load cleanly"
          if not problems else "\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
