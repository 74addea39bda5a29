"""``ksptrace trace`` on whatever PETSc this Python's petsc4py uses (Debian's 3.18 in the
project's venv, PyPI's in ``make test-stack``'s): ksptrace's own C program built against it, and
an unmodified petsc4py SNES program whose KSPSolves PETSc itself makes, inside SNESSolve. Every
recorded solve's iteration count and residual norms are those ``-ksp_monitor`` printed."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ksptrace.harness.monitoring import mpiwait
from tests.conftest import Runner
from tests.harness.hook import own_program
from tests.harness.hook.test_tutorials import assert_as_monitored, mpiexec, traced


@pytest.fixture(scope="module")
def petsc(ksptrace_cli: Runner) -> Path:
    pdir = own_program.petsc_dir()
    why = own_program.missing(pdir)
    if why is not None:
        pytest.fail(why)
    return pdir


@pytest.fixture(scope="module")
def laplace1d(petsc: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return own_program.build(tmp_path_factory.mktemp("laplace1d"), petsc)


@pytest.mark.parametrize("nprocs", [1, 2])
def test_own_c_program_counts_and_norms_are_the_monitors(
        petsc: Path, laplace1d: Path, ksptrace_cli: Runner, tmp_path: Path,
        nprocs: int) -> None:
    proc, traces = traced(ksptrace_cli, tmp_path, [*mpiexec(nprocs), str(laplace1d),
                                                   "-n", "60", "-solves", "3", "-ksp_monitor",
                                                   "-log_view"])
    (t,) = traces
    assert t.solves is not None
    assert t.solves.count == 3
    assert_as_monitored(t, proc.stdout)
    assert t.nprocs == nprocs
    assert t.attrs["problem"] == "laplace1d"
    assert t.attrs["n"] == 60
    assert (t.attrs["ksp"], t.attrs["pc"]) == ("cg", "jacobi")
    # the PETSc it was built against is the one the hook found and named
    assert str(t.attrs["petsc_version"]) == own_program.version(petsc)
    libraries = {p.resolve() for p in (petsc / "lib").glob("libpetsc*.so*")}
    assert Path(str(t.attrs["petsc_library"])).resolve() in libraries
    assert t.attrs["petsc_int_bytes"] == own_program.int_bytes(petsc)
    # PETSc's own log (PetscLogHandler since 3.20) still counts the three solves beside the hook
    assert re.search(r"^KSPSolve\s+3\s", proc.stdout, re.MULTILINE), proc.stdout[-3000:]
    # each iteration's wait in MPI reductions, with the counts and norms above unchanged
    assert t.attrs["wait_accounting"] == mpiwait.ACCOUNTING, t.attrs["wait_accounting"]
    assert t.wait_seconds is not None
    assert t.mpi_calls is not None
    assert t.wait_seconds.shape == t.iteration_seconds.shape
    if nprocs == 2:  # CG's dot products and norms are reductions over both ranks
        assert (t.mpi_calls >= 1).all()
        assert (t.mpi_calls[0] == t.mpi_calls[1]).all()


SNES_PROGRAM = """
import sys
import petsc4py
petsc4py.init(sys.argv)
from petsc4py import PETSc
n = 40
h2 = 1.0 / (n + 1) ** 2
J = PETSc.Mat().createAIJ([n, n], nnz=3)
J.setUp()
x, r = J.createVecs()

scatter, whole = PETSc.Scatter.toAll(x)

def residual(snes, u, f):  # -u'' + u^3 = 1 on (0, 1), u = 0 at both ends
    scatter.scatter(u, whole, PETSc.InsertMode.INSERT_VALUES, PETSc.ScatterMode.FORWARD)
    w = whole.getArray(readonly=True)
    lo, hi = f.getOwnershipRange()
    for i in range(lo, hi):
        left = w[i - 1] if i > 0 else 0.0
        right = w[i + 1] if i < n - 1 else 0.0
        f[i] = (2 * w[i] - left - right) / h2 + w[i] ** 3 - 1.0
    f.assemble()

def jacobian(snes, u, A, P):
    lo, hi = u.getOwnershipRange()
    uu = u.getArray(readonly=True)
    for i in range(lo, hi):
        P[i, i] = 2.0 / h2 + 3 * uu[i - lo] ** 2
        if i > 0:
            P[i, i - 1] = -1.0 / h2
        if i < n - 1:
            P[i, i + 1] = -1.0 / h2
    P.assemble()

snes = PETSc.SNES().create()
snes.setFunction(residual, r)
snes.setJacobian(jacobian, J)
snes.getKSP().setType("cg")
snes.getKSP().getPC().setType("jacobi")
snes.getKSP().setTolerances(rtol=1e-10)
snes.setFromOptions()
x.set(0.0)
snes.solve(None, x)
PETSc.Sys.Print("newton steps", snes.getIterationNumber())
"""


@pytest.mark.parametrize("nprocs", [1, 2])
def test_a_petsc4py_snes_newton_solves_made_inside_petsc_are_traced(
        petsc: Path, ksptrace_cli: Runner, tmp_path: Path, nprocs: int) -> None:
    """SNESSolve calls KSPSolve inside libpetsc: the hook sees each Newton step's solve."""
    script = tmp_path / "newton.py"
    script.write_text(SNES_PROGRAM)
    proc, (t,) = traced(ksptrace_cli, tmp_path / "out",
                        [*mpiexec(nprocs), sys.executable, str(script), "-ksp_monitor"])
    steps = int(proc.stdout.split("newton steps")[1].split()[0])
    assert steps >= 2
    assert t.solves is not None
    assert t.solves.count == steps  # one KSPSolve per Newton step, each at depth 1
    assert t.attrs["solve_depth"] == 1
    assert t.nprocs == nprocs
    assert str(t.attrs["petsc_version"]) == own_program.version(petsc)  # this stack's PETSc
    assert_as_monitored(t, proc.stdout)
