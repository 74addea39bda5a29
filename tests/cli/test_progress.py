"""The one progress display: a bar on a terminal, one timestamped line per item in a log."""

from __future__ import annotations

import io
import re

from ksptrace.cli.progress import Progress


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_gets_one_timestamped_line_per_item() -> None:
    out = io.StringIO()
    with Progress(3, "trace", out) as p:
        p.step("a.h5: KS tests")  # sub-steps are not logged
        p.advance("a.h5")
        p.advance("b.h5", "skipped: corrupt")
        p.advance("c.h5")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert re.match(stamp + r" trace 1 of 3 a\.h5 ok \(elapsed 0:00:\d\d, ETA 0:00:\d\d\)$",
                    lines[0])
    assert "trace 2 of 3 b.h5 skipped: corrupt" in lines[1]
    assert "trace 3 of 3 c.h5 ok" in lines[2]


def test_terminal_gets_a_bar_with_count_elapsed_and_eta() -> None:
    out = FakeTty()
    with Progress(2, "trace", out) as p:
        p.step("a.h5: Monte Carlo")
        p.advance("a.h5")
        p.advance("b.h5", "skipped: corrupt")
    text = out.getvalue()
    assert "trace 2 of 2" in text
    assert "elapsed" in text
    assert "ETA" in text
    assert "b.h5: skipped: corrupt" in text  # a verdict other than ok stays visible
    assert "a.h5: Monte Carlo" in text


def test_disabled_prints_nothing() -> None:
    out = io.StringIO()
    with Progress(1, "run", out, enabled=False) as p:
        p.advance("x")
    assert out.getvalue() == ""
    assert p.done == 1


def test_campaign_runs_use_the_same_display() -> None:
    from types import SimpleNamespace

    from ksptrace.cli.campaign import RunProgress

    out = io.StringIO()
    bar = RunProgress(out)
    runs = [SimpleNamespace(run_id=f"r{i}", log=f"logs/r{i}.log") for i in range(2)]
    bar(1, 2, runs[0], True, 1.0)  # type: ignore[arg-type]
    bar(2, 2, runs[1], False, 2.0)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "run 1 of 2 r0 ok (elapsed" in lines[0]
    assert "run 2 of 2 r1 FAILED, see logs/r1.log" in lines[1]


TQDM_PROBE = """
import io, sys
from ksptrace.cli.progress import Progress
class FakeTty(io.StringIO):
    def isatty(self):
        return True
with Progress(1, "trace", io.StringIO()) as p:
    p.advance("a.h5")
with Progress(1, "trace", FakeTty(), enabled=False) as p:
    p.advance("a.h5")
print("tqdm" in sys.modules)
with Progress(1, "trace", FakeTty()) as p:
    p.advance("a.h5")
print("tqdm" in sys.modules)
"""


def test_tqdm_is_imported_only_to_draw_a_bar() -> None:
    """A log and --quiet need no tqdm (20 ms of every start-up on the PyPI stack); a terminal's
    bar imports it, so the check can fail."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    proc = subprocess.run([sys.executable, "-c", TQDM_PROBE], cwd=ROOT, capture_output=True,
                          text=True, check=True, timeout=120)
    assert proc.stdout.split() == ["False", "True"], proc.stderr
