"""``ksptrace show``: summaries, bad files named, and a reader that goes away (``| head``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace.io import write_trace
from ksptrace.trace.synthetic import synthetic_trace

ROOT = Path(__file__).resolve().parents[2]


def test_show_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_trace(synthetic_trace(4, 20, 2, "cg"), tmp_path / "t.h5")
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}  (schema 1)")
    assert "sum_max_iteration" in out


def test_a_bad_trace_is_named_and_the_others_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"junk")
    good = write_trace(synthetic_trace(4, 20, 2, "cg"), tmp_path / "good.h5")
    assert main(["show", str(bad), str(good)]) == 4
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"ksptrace: error: {bad}: not a readable HDF5 file (corrupt or truncated); "
        "rerun the run that made it"
    ]
    assert captured.out.startswith(f"{good}  (schema 1)")


def test_show_into_head_has_no_traceback(tmp_path: Path) -> None:
    path = write_trace(synthetic_trace(4, 20, 2, "cg"), tmp_path / "t.h5")
    show = subprocess.Popen(
        [sys.executable, "-m", "ksptrace", "show", *[str(path)] * 400],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert show.stdout is not None
    assert show.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=show.stdout, capture_output=True, timeout=60,
                          check=True)
    show.stdout.close()
    err = show.stderr.read().decode()
    assert show.wait(timeout=60) in (0, 141)
    assert head.stdout.decode().startswith(str(path))
    assert err == ""
