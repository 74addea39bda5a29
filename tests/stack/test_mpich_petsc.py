"""``ksptrace trace`` on MPICH for real (issues 64 and 65): PETSc's own ex2, built unmodified
against the PETSc that ``make stack-mpich-petsc`` compiles with MPICH (the tutorial of that very
version, kept by the build), traced under ``mpiexec.mpich`` at 1 and 2 ranks: the iterations and
residual norms are those ex2's ``-ksp_monitor`` printed, and the trace names MPICH's launcher,
the flags that passed the hook on (``-genv``), MPICH and that PETSc. ``ksptrace.record`` (through
its C hooks) writes each iteration's wait in reductions there too (issue 65).

Skipped, with the command that builds it, where the stack is not built (``make test`` builds it:
scripts/bootstrap.sh --test).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ksptrace.trace.io import read_trace
from tests.conftest import ROOT, Runner, solver_env
from tests.harness.hook import own_program
from tests.harness.hook.test_tutorials import assert_as_monitored
from tests.stack import stacks


@pytest.fixture(scope="module")
def on_mpich(tmp_path_factory: pytest.TempPathFactory) -> tuple[stacks.Stack, Path]:
    """The MPICH stack and PETSc's ex2 compiled against its PETSc in a temporary folder."""
    found = stacks.mpich_petsc()
    if isinstance(found, str):
        pytest.skip(found)
    stack, tutorials = found
    pdir = Path(stack.env["PETSC_DIR"])
    conf = own_program.variables(pdir)
    compiler = conf.get("PCC") or conf["CC"]
    assert compiler == "mpicc.mpich", compiler  # the stack's PETSc was configured with MPICH
    folder = tmp_path_factory.mktemp("mpich-ex2")
    program = folder / "ex2"
    subprocess.run([compiler, "-O1", f"-I{pdir}/include", str(tutorials / "ex2.c"), "-o",
                    str(program), f"-L{pdir}/lib", *conf["PETSC_LIB_BASIC"].split(), "-lm",
                    f"-Wl,-rpath,{pdir}/lib"], check=True, capture_output=True, text=True,
                   timeout=300, cwd=folder)
    linked = subprocess.run(["ldd", str(program)], capture_output=True, text=True,
                            check=True).stdout
    assert "libmpich" in linked, linked  # MPICH's library ...
    assert "libmpi.so.40" not in linked, linked  # ... and not Open MPI's
    return stack, program


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_ex2_traced_under_mpiexec_mpich(on_mpich: tuple[stacks.Stack, Path],
                                        ksptrace_cli: Runner, tmp_path: Path,
                                        nprocs: int) -> None:
    stack, ex2 = on_mpich
    out = tmp_path / "traces"
    proc = ksptrace_cli("trace", "--out", str(out), "--", "mpiexec.mpich", "-n", str(nprocs),
                        str(ex2), "-m", "20", "-n", "20", "-ksp_monitor",
                        PETSC_DIR=stack.env["PETSC_DIR"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = sorted(out.glob("*.h5"))
    t = read_trace(path)
    assert_as_monitored(t, proc.stdout)
    assert t.nprocs == nprocs
    assert t.attrs["problem"] == "ex2"
    assert t.attrs["n"] == 400
    assert t.attrs["petsc_version"] == stacks.pypi_version()
    assert str(t.attrs["mpi_library"]).startswith("MPICH")
    assert os.path.realpath(str(t.attrs["petsc_dir"])) == os.path.realpath(
        stack.env["PETSC_DIR"])
    assert t.attrs["launcher"] == "mpich"
    assert "-genv LD_PRELOAD" in str(t.attrs["launcher_flags"])
    assert "-x " not in str(t.attrs["launcher_flags"])  # no Open MPI flag reached Hydra
    assert str(t.attrs["command_line"]).startswith("mpiexec.mpich -n")
    if nprocs == 2:  # block Jacobi's sub-solves are nested: counted and named, not traced
        assert "nested solves of KSP preonly (prefix sub_)" in str(t.attrs["solves_left_out"])
    # the hook's waits under MPICH (issue 65): PETSc reduces through MPI_Allreduce_c there
    assert t.wait_seconds is not None
    assert t.mpi_calls is not None
    assert (t.wait_seconds <= t.iteration_seconds).all()
    if nprocs == 2:  # GMRES reduces in every iteration, on both ranks
        assert (t.mpi_calls >= 1).all()


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_record_writes_the_waits_on_mpich(on_mpich: tuple[stacks.Stack, Path], tmp_path: Path,
                                          nprocs: int) -> None:
    stack, _ = on_mpich
    proc = subprocess.run([stack.mpiexec, "-n", str(nprocs), stack.python,
                           str(ROOT / "tests" / "harness" / "record_check.py"), str(tmp_path)],
                          env=stack.environ(solver_env(KSPTRACE_MONITOR="c")),
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = read_trace(tmp_path / "loop.h5")
    assert str(trace.attrs["mpi_library"]).startswith("MPICH")
    assert trace.attrs["petsc_version"] == stacks.pypi_version()
    assert trace.attrs["monitor"] == "c"
    assert trace.wait_seconds is not None
    assert trace.mpi_calls is not None
    assert (trace.wait_seconds <= trace.iteration_seconds).all()
    if nprocs == 1:  # sequential vectors: hardly a reduction reaches MPI
        assert trace.mpi_calls.sum() < 0.1 * trace.iterations
    else:  # CG: every iteration reduces, on both ranks alike
        assert (trace.mpi_calls >= 1).all()
        assert (trace.mpi_calls[0] == trace.mpi_calls[1]).all()
