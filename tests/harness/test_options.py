"""PETSc options passed through ``ksptrace run``: never silently unused, never contradicting
--ksp/--pc, in the file name, with PETSc's own error text, and no file PETSc fails to write
after the trace is published."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.cli.run import _check_type_names, output_path
from ksptrace.errors import UsageError
from ksptrace.harness.petsc.petscenv import file_option_problem, petsc_error_text
from ksptrace.trace.read import read_trace
from tests.cli.test_run_errors import one_error_line
from tests.conftest import ROOT, solver_env

RUN = ("run", "--n", "200", "--iterations", "8")


@pytest.mark.mpi
def test_unused_options_are_refused_by_rank_0_alone(require_petsc: None, tmp_path: Path) -> None:
    """Under the user's own mpiexec -n 2: one line (rank 0), the nearest known name, no trace."""
    proc = subprocess.run(
        ["mpiexec", "-n", "2", sys.executable, "-m", "ksptrace", *RUN, "--out", str(tmp_path),
         "-ksp_gmres_restat", "60", "-foo_bar", "3"],
        env=solver_env(), capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert proc.returncode == 2, proc.stderr
    line = one_error_line(proc.stderr)
    assert "PETSc never used" in line
    assert "-ksp_gmres_restat (did you mean -ksp_gmres_restart?)" in line
    assert "-foo_bar" in line
    assert "-foo_bar (did you mean" not in line
    assert "ksptracehelp" not in proc.stdout + proc.stderr  # PETSc's help, read, never shown
    assert "--allow-unused-options" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.mpi
def test_allowed_unused_options_are_recorded(ksptrace_cli, tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    proc = ksptrace_cli(*RUN, "--out", str(path), "--allow-unused-options",
                        "-ksp_gmres_restat", "60", "-foo_bar", "3")
    assert proc.returncode == 0, proc.stderr
    attrs = read_trace(path).attrs
    assert attrs["petsc_options_unused"] == "-foo_bar -ksp_gmres_restat"
    assert attrs["allow_unused_options"] is True
    assert attrs["restart"] == 30  # the misspelled restart was not applied


@pytest.mark.mpi
def test_used_and_finalize_time_options_are_not_reported(ksptrace_cli, tmp_path: Path) -> None:
    """Options read at solve, destroy or PetscFinalize time are used, not unused."""
    path = tmp_path / "t.h5"
    log = tmp_path / "log.txt"
    proc = ksptrace_cli(*RUN, "--out", str(path), "-ksp_gmres_restart", "40",
                        "-ksp_converged_reason", "-options_left", "-log_view", f":{log}")
    assert proc.returncode == 0, proc.stderr
    attrs = read_trace(path).attrs
    assert attrs["petsc_options_unused"] == ""
    assert attrs["restart"] == 40
    assert "PETSc Performance Summary" in log.read_text()


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ksp", "gmres", "-ksp_type", "bcgs"],
         "the PETSc options make the KSP bcgs but --ksp is gmres"),
        (["--pc", "jacobi", "-pc_type", "none"],
         "the PETSc options make the PC none but --pc is jacobi"),
    ],
)
def test_type_options_contradicting_ksp_or_pc_are_refused(
    ksptrace_cli, tmp_path: Path, args: list[str], message: str
) -> None:
    proc = ksptrace_cli(*RUN, "--out", str(tmp_path), *args)
    assert proc.returncode == 2
    assert message in one_error_line(proc.stderr)
    assert list(tmp_path.iterdir()) == []


def test_file_name_has_a_digest_of_the_petsc_options(tmp_path: Path) -> None:
    run = {"problem": "laplace1d", "ksp": "gmres", "pc": "jacobi", "n": 100, "iterations": 5,
           "restart": None}
    plain = output_path(str(tmp_path), run, 1, "")
    r60 = output_path(str(tmp_path), run, 1, "", ("-ksp_gmres_restart", "60"))
    r30 = output_path(str(tmp_path), run, 1, "", ("-ksp_gmres_restart", "30"))
    assert plain.name == "laplace1d_gmres_jacobi_n100_P1_K5.h5"
    assert len({plain, r60, r30}) == 3
    assert r60 == output_path(str(tmp_path), run, 1, "", ("-ksp_gmres_restart", "60"))
    assert r60.name.startswith("laplace1d_gmres_jacobi_n100_P1_K5_o")


@pytest.mark.mpi
def test_a_different_experiment_is_not_called_a_rerun(ksptrace_cli, tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    proc = ksptrace_cli(*RUN, "--out", str(path), "-ksp_gmres_restart", "60")
    assert proc.returncode == 0, proc.stderr
    before = path.read_bytes()
    proc = ksptrace_cli(*RUN, "--out", str(path), "-ksp_gmres_restart", "30")
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert "holds a different experiment" in line
    assert "-ksp_gmres_restart 60" in line
    assert "-ksp_gmres_restart 30" in line
    assert "--overwrite" not in line
    assert path.read_bytes() == before
    proc = ksptrace_cli(*RUN, "--out", str(path), "-ksp_gmres_restart", "60")
    assert "already exists; pass --overwrite" in one_error_line(proc.stderr)  # a rerun


@pytest.mark.mpi
@pytest.mark.parametrize("np_args", [[], ["--np", "2"]], ids=["singleton", "np2"])
def test_petsc_error_text_is_shown(ksptrace_cli, tmp_path: Path, np_args: list[str]) -> None:
    proc = ksptrace_cli(*RUN, *np_args, "--out", str(tmp_path), "-ksp_gmres_restart", "0")
    assert proc.returncode != 0
    line = one_error_line(proc.stderr)
    assert "Restart must be positive" in line, line
    assert "KSPGMRESSetRestart" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("attribute", ["_traceback_", "_traceback"])  # petsc4py 3.18, 3.26
def test_petsc_error_text_from_petsc4py_traceback(attribute: str) -> None:
    class FakeError(RuntimeError):
        ierr = 63

    error = FakeError()
    setattr(error, attribute, ["KSPSetFromOptions() at ./src/ksp/itcl.c:624",
                               "KSPGMRESSetRestart_GMRES() at ./src/ksp/gmres.c:606",
                               "Argument out of range", "Restart must be positive"])
    assert petsc_error_text(error) == (
        "PETSc error 63 in KSPGMRESSetRestart_GMRES(): Argument out of range: "
        "Restart must be positive"
    )
    assert petsc_error_text(RuntimeError()) == "PETSc error None"


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("option", "message"),
    [(["-log_view", ":{tmp}/missing/log.txt"], "-log_view :"),
     (["-options_left", "abc"], "-options_left: PETSc error 62 in PetscOptionsStringToBool(): "
                                "Invalid argument: Unknown logical value: abc")],
    ids=["log_view", "options_left"],
)
def test_options_petsc_uses_at_exit_are_checked_before_the_solve(
    ksptrace_cli, tmp_path: Path, option: list[str], message: str
) -> None:
    """Either the run failed and there is no trace, or it did not and the exit is 0 (it was 1,
    with a published trace, when PetscFinalize failed on the option on 2 ranks)."""
    out = tmp_path / "out"
    out.mkdir()
    args = [a.replace("{tmp}", str(tmp_path)) for a in option]
    proc = ksptrace_cli(*RUN, "--np", "2", "--out", str(out), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc.stderr)
    assert "PETSC ERROR" not in proc.stderr
    assert list(out.iterdir()) == []


@pytest.mark.mpi
def test_petsc_initialisation_error_is_one_line(ksptrace_cli, tmp_path: Path) -> None:
    proc = ksptrace_cli(*RUN, "--out", str(tmp_path), "-malloc_debug", "/x")
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert "PETSc did not start with these options" in line
    assert "Unknown logical value: /x" in line
    assert "PETSC ERROR" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_file_option_destinations(tmp_path: Path) -> None:
    assert file_option_problem("log_view", None) is None
    assert file_option_problem("log_view", "ascii") is None  # standard output
    assert file_option_problem("log_view", f":{tmp_path}/log.txt") is None
    assert file_option_problem("log_view", f"ascii:{tmp_path}/log.xml:ascii_xml") is None
    missing = file_option_problem("log_view", f":{tmp_path}/no/log.txt")
    assert "does not exist" in str(missing)
    assert "is a folder" in str(file_option_problem("log_view", f":{tmp_path}"))
    assert "does not exist" in str(file_option_problem("malloc_dump", f"{tmp_path}/no/x"))
    assert file_option_problem("ksp_view", f":{tmp_path}/no/x") is None  # read before publish



def test_unknown_type_names_get_a_suggestion_before_mpiexec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KSPTRACE_PETSC_TYPES", "builtin")  # PETSc 3.18's names, no child
    with pytest.raises(UsageError, match=r"unknown KSP type 'gmers'; did you mean 'gmres'\?"):
        _check_type_names("gmers", "jacobi")
    with pytest.raises(UsageError, match=r"unknown PC type 'jacobbi'; did you mean 'jacobi'\?"):
        _check_type_names("gmres", "jacobbi")
    _check_type_names("pipecg", "none")


def test_a_petsc4py_that_cannot_load_says_why_not_the_options(tmp_path: Path) -> None:
    """A petsc4py built for another numpy fails on import with numpy's ValueError; that was
    reported as 'PETSc did not start with these options (no message)'."""
    fake = tmp_path / "fake" / "petsc4py"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("def init(args=None):\n    pass\n")
    (fake / "PETSc.py").write_text(
        'raise ValueError("numpy.dtype size changed, may indicate binary incompatibility. '
        'Expected 96 from C header, got 88 from PyObject")\n')
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "ksptrace", "run", "--n", "100", "--iterations", "5", "--out",
         str(out)], env={**solver_env(), "PYTHONPATH": f"{tmp_path / 'fake'}:{ROOT}"},
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0
    line = one_error_line(proc.stderr)
    assert "petsc4py could not be loaded (ValueError: numpy.dtype size changed" in line
    assert "make setup" in line
    assert "PETSc options" not in line
    assert list(out.iterdir()) == []
