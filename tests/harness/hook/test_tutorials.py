"""``ksptrace trace`` on PETSc's own tutorials, built unmodified (C and Fortran): every
recorded solve's iteration count and residual norms are those ``-ksp_monitor`` printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.harness.monitoring import mpiwait
from ksptrace.trace.io import read_trace
from ksptrace.trace.model import Trace
from tests.conftest import Runner
from tests.harness.hook import tutorials


def traced(cli: Runner, out: Path, command: list[str], *flags: str, **env: str) -> tuple[
        subprocess.CompletedProcess[str], list[Trace]]:
    proc = cli("trace", "--out", str(out), *flags, "--", *command, **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, [read_trace(p) for p in sorted(out.glob("*.h5"))]


def mpiexec(nprocs: int) -> list[str]:
    return ["mpiexec", "-n", str(nprocs)]


def assert_as_monitored(trace: Trace, stdout: str) -> None:
    """The trace's solves are ``-ksp_monitor``'s: counts and norms (printed to 13 digits)."""
    printed = tutorials.monitor_solves(stdout)
    assert trace.solves is not None
    assert [len(s) - 1 for s in printed] == trace.solves.iterations.tolist()
    assert trace.solves.petsc_iterations.tolist() == trace.solves.iterations.tolist()
    np.testing.assert_allclose(trace.residual_norms, np.concatenate(printed), rtol=5e-12)
    assert trace.timing_fault() is None
    assert (trace.solves.seconds > 0).all()


@pytest.mark.parametrize("nprocs", [1, 2])
def test_ex2_counts_and_norms_are_the_monitors(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path, nprocs: int) -> None:
    proc, traces = traced(ksptrace_cli, tmp_path, [*mpiexec(nprocs), str(programs["ex2"]),
                                                   "-m", "20", "-n", "20", "-ksp_monitor"])
    assert len(traces) == 1
    t = traces[0]
    assert_as_monitored(t, proc.stdout)
    assert t.nprocs == nprocs
    assert t.attrs["problem"] == "ex2"
    assert t.attrs["n"] == 400
    assert t.attrs["petsc_version"] == "3.18.5"
    assert t.attrs["petsc_int_bytes"] == 4
    assert t.attrs["launcher"] == "openmpi"
    assert "-x LD_PRELOAD" in str(t.attrs["launcher_flags"])
    assert str(t.attrs["command_line"]).startswith("mpiexec -n")
    assert t.attrs["wait_accounting"] == mpiwait.ACCOUNTING, t.attrs["wait_accounting"]
    assert t.wait_seconds is not None
    assert t.mpi_calls is not None
    assert t.wait_seconds.shape == t.iteration_seconds.shape
    if nprocs == 2:  # block Jacobi's sub-solves are nested: counted and named, not traced
        assert (t.mpi_calls >= 1).all()  # GMRES's orthogonalisation and norm
        assert "nested solves of KSP preonly (prefix sub_) at depth 2" in proc.stderr
        assert "nested solves of KSP preonly (prefix sub_)" in str(t.attrs["solves_left_out"])


@pytest.mark.parametrize("nprocs", [1, 2])
def test_ex19_traces_each_newton_steps_solve(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path, nprocs: int) -> None:
    proc, traces = traced(ksptrace_cli, tmp_path, [*mpiexec(nprocs), str(programs["ex19"]),
                                                   "-da_refine", "1", "-ksp_monitor"])
    (t,) = traces
    assert t.solves is not None
    assert t.solves.count == 2
    assert_as_monitored(t, proc.stdout)
    assert float(t.attrs["setup_seconds"]) > 0
    assert len(str(t.attrs["setup_seconds_solves"]).split()) == 2


def test_ex45_setup_solves_are_left_out_unless_asked(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path) -> None:
    command = [*mpiexec(2), str(programs["ex45"]), "-pc_type", "mg", "-pc_mg_levels", "3",
               "-da_refine", "1", "-ksp_monitor"]
    proc, (outer,) = traced(ksptrace_cli, tmp_path / "default", command)
    assert outer.attrs["pc"] == "mg"
    assert outer.attrs["solve_depth"] == 1
    assert_as_monitored(outer, proc.stdout)
    assert "set-up solves of KSP gmres (prefix mg_levels_1_esteig_)" in proc.stderr
    proc, traces = traced(ksptrace_cli, tmp_path / "setup",
                          [*command, "-log_view"], "--with-setup")
    assert "KSPSolve" in proc.stdout
    assert "PCSetUp" in proc.stdout
    by_prefix = {t.attrs["ksp_prefix"]: t for t in traces}
    assert set(by_prefix) == {"", "mg_levels_1_esteig_", "mg_levels_2_esteig_"}
    for prefix in ("mg_levels_1_esteig_", "mg_levels_2_esteig_"):
        est = by_prefix[prefix]
        assert est.attrs["setup_solve"]
        assert est.attrs["solve_depth"] == 2
        assert est.solves is not None
        assert est.solves.iterations.tolist() == [10]
    assert_as_monitored(by_prefix[""], proc.stdout)
    _, deep = traced(ksptrace_cli, tmp_path / "depth", command, "--depth", "2",
                     "--ksp-prefix", "mg_levels_2_esteig_")
    assert [t.attrs["ksp_prefix"] for t in deep] == ["mg_levels_2_esteig_"]


@pytest.mark.parametrize("nprocs", [1, 2])
def test_fortran_ex2f_counts_and_norms_are_the_monitors(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path, nprocs: int) -> None:
    proc, (t,) = traced(ksptrace_cli, tmp_path, [*mpiexec(nprocs), str(programs["ex2f"]),
                                                 "-ksp_monitor"])
    assert t.attrs["problem"] == "ex2f"
    assert t.nprocs == nprocs
    assert_as_monitored(t, proc.stdout)


def test_a_ksp_with_every_monitor_slot_taken_is_said_not_crashed(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path) -> None:
    full = [w for m in ("", "_true_residual", "_max", "_singular_value", "_range")
            for w in (f"-ksp_monitor{m}", "ascii:/dev/null")]
    proc = ksptrace_cli("trace", "--out", str(tmp_path / "out"), "--", str(programs["ex2"]),
                        *full)
    assert proc.returncode == 5, proc.stderr
    assert "MAXKSPMONITORS" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Norm of error" in proc.stdout  # the program itself ran to its end
    assert not (tmp_path / "out").exists()  # the folder it made is gone, with its records


def test_analyze_of_a_traced_ex19_reports_both_newton_solves(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path) -> None:
    _, (t,) = traced(ksptrace_cli, tmp_path / "t", [*mpiexec(2), str(programs["ex19"]),
                                                    "-da_refine", "1"])
    assert t.path is not None
    proc = ksptrace_cli("analyze", t.path, "--out", str(tmp_path / "r"), "--no-figures",
                        "--no-cache", "--quiet", "--mc-runs", "2", "--candidates", "norm")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    rows = sorted(summary["traces"], key=lambda r: r["trace"])
    assert t.solves is not None
    assert [r["trace"].rsplit("#", 1)[1] for r in rows] == ["solve=0", "solve=1"]
    assert [r["iterations"] for r in rows] == t.solves.iterations.tolist()
    assert all(r["kspsolve"] > 0 and r["nprocs"] == 2 for r in rows)


PETSC4PY_PROGRAM = """
import sys
import petsc4py
petsc4py.init(sys.argv)
from petsc4py import PETSc
n = 100
A = PETSc.Mat().createAIJ([n, n], nnz=3)
start, end = A.getOwnershipRange()
for i in range(start, end):
    A[i, i] = 2.0
    if i > 0:
        A[i, i - 1] = -1.0
    if i < n - 1:
        A[i, i + 1] = -1.0
A.assemble()
x, b = A.createVecs()
ksp = PETSc.KSP().create()
ksp.setOperators(A)
ksp.setType("cg")
ksp.getPC().setType("jacobi")
ksp.setFromOptions()
for step in range(3):
    b.set(step + 1.0)
    ksp.solve(b, x)
"""


def test_an_unmodified_petsc4py_program_is_traced(ksptrace_cli: Runner, tmp_path: Path) -> None:
    """petsc4py loads libpetsc privately (RTLD_LOCAL): the hook still finds PETSc's KSPSolve."""
    script = tmp_path / "solve.py"
    script.write_text(PETSC4PY_PROGRAM)
    proc, (t,) = traced(ksptrace_cli, tmp_path / "out",
                        [*mpiexec(2), sys.executable, str(script), "-ksp_monitor"])
    assert t.attrs["problem"] == "solve"
    assert t.attrs["ksp"] == "cg"
    assert t.solves is not None
    assert t.solves.count == 3
    assert_as_monitored(t, proc.stdout)
