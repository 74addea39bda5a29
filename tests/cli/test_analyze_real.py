"""The report from real traces: the harness runs solvers under mpiexec, then analyze reads them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.conftest import Runner

pytestmark = pytest.mark.mpi

REAL_RUNS = (
    ("gmres", 2), ("pgmres", 2), ("bcgs", 2), ("pipebcgs", 2), ("gmres", 1), ("pipebcgs", 1),
)
"""laplace1d, n = 20000, K = 300: standard and pipelined solvers at P = 2, two of them at P = 1."""


def real_traces(run: Runner, base: Path) -> dict[tuple[str, int], Path]:
    """Real harness traces of REAL_RUNS under ``base`` (made once per test session)."""
    out = {}
    for ksp, nprocs in REAL_RUNS:
        folder = base / "real-traces" / f"{ksp}-P{nprocs}"
        if not list(folder.glob("*.h5")):
            proc = run("run", "--n", "20000", "--ksp", ksp, "--iterations", "300",
                       "--np", str(nprocs), "--out", str(folder))
            assert proc.returncode == 0, proc.stderr
        (out[ksp, nprocs],) = folder.glob("*.h5")
    return out


def test_report_from_harness_traces(
    ksptrace_cli: Runner, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    made = real_traces(ksptrace_cli, tmp_path_factory.getbasetemp())
    broken = tmp_path / "broken.h5"
    broken.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    out = tmp_path / "report"
    files = [str(made[ksp, 2]) for ksp in ("gmres", "pgmres", "bcgs", "pipebcgs")]
    proc = ksptrace_cli("analyze", *files, str(broken), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("broken.h5") == 1  # named once and skipped, the rest analysed
    assert "Traceback" not in proc.stderr
    assert "trace 5 of 5" in proc.stderr  # the progress display, one line per trace in logs
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," not in html  # figures are files beside their pages
    run_page = (out / "runs" / "run-1.html").read_text()
    assert "<img" in run_page
    assert len(list((out / "runs").glob("run-1-*.png"))) >= 3
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["traces"]) == 4
    assert len(summary["skipped"]) == 1
    with (out / "table1_models.csv").open() as f:
        table1 = list(csv.DictReader(f))
    assert sorted(r["ksp"] for r in table1) == ["bcgs", "gmres", "pgmres", "pipebcgs"]
    for row, trace in zip(table1, summary["traces"], strict=True):
        assert row["best_fit"] == (trace["best_fit"] or "")  # Table 1 and summary.json agree
        assert float(row["KSPSolve_s"]) == pytest.approx(trace["kspsolve"])
        assert float(row["sum_k_max_p_T_s"]) == pytest.approx(trace["sum_k_max_p_T"])
