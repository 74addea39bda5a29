"""``ksptrace show``: summaries, bad files named, and a reader that goes away (``| head``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

ROOT = Path(__file__).resolve().parents[2]


def test_show_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_trace(synthetic_trace(4, 20, 2, "cg"), tmp_path / "t.h5")
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}  (schema 2)")
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
    assert captured.out.startswith(f"{good}  (schema 2)")


def _into_head(*args: str) -> tuple[int, str, str]:
    """Run ``ksptrace ARGS | head -1``: ksptrace's exit code and stderr, and head's output."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ksptrace", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=proc.stdout, capture_output=True, timeout=60,
                          check=True)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err, head.stdout.decode()


def test_show_into_head_has_no_traceback(tmp_path: Path) -> None:
    path = write_trace(synthetic_trace(4, 20, 2, "cg"), tmp_path / "t.h5")
    code, err, first = _into_head("show", *[str(path)] * 400)
    assert code in (0, 141)
    assert first.startswith(str(path))
    assert err == ""


def test_campaign_plan_into_head_has_no_traceback(tmp_path: Path) -> None:
    sizes = ", ".join(str(1000 * i) for i in range(1, 41))
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        '[campaign]\nname = "big"\noutput = "out"\n\n[sweep]\nksp = ["gmres", "bcgs", "cg"]\n'
        f"nprocs = [1, 2, 3, 4, 5, 6, 7, 8]\nn = [{sizes}]\niterations = 30\n"
    )
    code, err, first = _into_head("campaign", "plan", str(campaign))
    assert code in (0, 141)
    assert first.strip()
    assert "Traceback" not in err
    assert "BrokenPipe" not in err


def test_a_trace_of_several_solves_lists_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.trace.test_solves import LENGTHS, several

    path = write_trace(several(), tmp_path / "loop.h5")
    assert main(["show", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if "5 solves:" in line)
    rows = [line.split() for line in lines[start + 1:]]
    assert [int(r[1]) for r in rows] == list(LENGTHS)
    assert rows[2][3] == "DIVERGED_ITS"
