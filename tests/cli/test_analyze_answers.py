"""``ksptrace analyze`` prints the report's answers, short, as ``make demo`` does (issue 67)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.report.terminal import MAX_LINES, summary_lines
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

FAST = ["--candidates", "norm", "--mc-runs", "1", "--no-figures", "--quiet", "--no-cache"]


def test_analyze_prints_the_answers_then_what_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for k, ksp in enumerate(("gmres", "pgmres")):
        path = tmp_path / f"t{k}.h5"
        write_trace(synthetic_trace(4, 40, 2, ksp, seed=k), path)
        paths.append(str(path))
    out = tmp_path / "report"
    assert main(["analyze", *paths, "--out", str(out), *FAST]) == 0
    lines = capsys.readouterr().out.splitlines()
    digest = json.loads((out / "summary.json").read_text())
    answers = summary_lines(digest, str(out / "report.html"))
    assert digest["answers"]  # the check below compares something
    assert any(line.startswith("1. ") for line in answers)
    start = lines.index(answers[0])
    assert lines[start:start + len(answers)] == answers
    assert lines[-1].startswith(f"wrote {out / 'report.html'} (2 traces analysed")
    assert len(lines) <= MAX_LINES + 2  # the answers, the units line, what was written
