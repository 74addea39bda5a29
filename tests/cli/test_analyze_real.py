"""The report from real traces: the harness runs solvers under mpiexec, then analyze reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi


def test_report_from_harness_traces(ksptrace_cli, tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    for ksp in ("gmres", "pgmres", "bcgs", "pipebcgs"):
        proc = ksptrace_cli("run", "--n", "20000", "--ksp", ksp, "--iterations", "300",
                            "--np", "2", "--out", str(traces))
        assert proc.returncode == 0, proc.stderr
    (traces / "broken.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    out = tmp_path / "report"
    files = sorted(str(p) for p in traces.glob("*.h5"))
    proc = ksptrace_cli("analyze", *files, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "broken.h5" in proc.stderr  # named and skipped, the rest analysed
    assert "Traceback" not in proc.stderr
    html = (out / "report.html").read_text()
    assert "<img" in html
    assert "data:image/png;base64," in html
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["traces"]) == 4
    assert len(summary["skipped"]) == 1
    table1 = (out / "table1_models.csv").read_text().splitlines()
    assert len(table1) == 1 + 4
    for ksp in ("gmres", "pgmres", "bcgs", "pipebcgs"):
        assert any(f",{ksp}," in row for row in table1[1:]), ksp
