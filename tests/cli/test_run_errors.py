"""Bad input to ``ksptrace run``: one clear line, a non-zero exit, no traceback, no file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.errors import EnvironmentProblem

pytestmark = pytest.mark.mpi


def one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr, stderr
    errors = [ln for ln in lines if ln.startswith("ksptrace: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--problem", "laplace2d"], "unknown problem 'laplace2d'; valid problems: "),
        (["--ksp", "gmress"], "unknown KSP type 'gmress'; did you mean 'gmres'? valid types:"),
        (["--pc", "jacobbi"], "unknown PC type 'jacobbi'; did you mean 'jacobi'? valid types:"),
        (["--n", "1", "--np", "2"], "n = 1 is smaller than P = 2"),
        (["--iterations", "0"], "--iterations must be >= 1"),
        (["--iterations", "ten"], "--iterations must be int"),
        (["--iteration", "10"], "unknown option --iteration; did you mean --iterations?"),
        # issue 50: a rank the run does not have detoured nowhere, and the run exited 0
        (["--noise", "fixed:value=100us,ranks=5"],
         "names rank 5, but the run has 2 ranks, numbered from 0; name ranks below 2"),
        (["--noise", "fixed:value=100us,ranks=0; fixed:value=1us,ranks=1-3+7"],
         "names rank 2-3+7, but the run has 2 ranks"),
        # per=node: the node count is known only once launched; every rank refuses alike
        (["--noise", "fixed:value=100us,per=node,ranks=1"],
         "names node 1, but the run has 1 node, numbered from 0; name nodes below 1"),
    ],
)
def test_bad_input(ksptrace_cli, tmp_path: Path, args: list[str], message: str) -> None:
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--np", "2",
                        "--out", str(tmp_path), *args)
    assert proc.returncode != 0
    assert message in one_error_line(proc.stderr)
    assert list(tmp_path.iterdir()) == []


def test_existing_output_is_refused(ksptrace_cli, tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    path.write_bytes(b"precious")
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--out", str(path))
    assert proc.returncode != 0
    assert "--overwrite" in one_error_line(proc.stderr)
    assert path.read_bytes() == b"precious"
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--out", str(path),
                        "--overwrite")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_folder(ksptrace_cli, tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--out", str(folder))
    assert proc.returncode != 0
    assert "not writable" in one_error_line(proc.stderr)


def test_unwritable_folder_as_any_user(ksptrace_cli, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--out", str(blocker / "sub"))
    assert proc.returncode != 0
    assert "cannot create output folder" in one_error_line(proc.stderr)


def test_exception_on_one_rank_aborts_the_job(ksptrace_cli, tmp_path: Path) -> None:
    proc = ksptrace_cli("run", "--n", "1000", "--iterations", "5", "--np", "2",
                        "--out", str(tmp_path), KSPTRACE_FAULT="raise-on-rank-1", timeout=60)
    assert proc.returncode != 0
    assert "injected fault on rank 1" in one_error_line(proc.stderr)
    assert list(tmp_path.iterdir()) == []


def test_solver_that_stops_early_is_an_error(ksptrace_cli, tmp_path: Path) -> None:
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "50", "--out", str(tmp_path),
                        "-ksp_max_it", "10")
    assert proc.returncode != 0
    assert "stopped after 10 of 50 iterations" in one_error_line(proc.stderr)


def test_missing_mpiexec(ksptrace_cli, tmp_path: Path) -> None:
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--np", "2",
                        "--out", str(tmp_path), KSPTRACE_MPIEXEC="no-such-mpiexec")
    assert proc.returncode == 3
    assert "'no-such-mpiexec' not found on PATH" in one_error_line(proc.stderr)


def test_missing_petsc4py(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                          tmp_path: Path) -> None:
    from ksptrace.harness.petsc import petscenv

    monkeypatch.setitem(__import__("sys").modules, "petsc4py", None)
    monkeypatch.setattr(petscenv, "petsc_dir_candidates", list)
    with pytest.raises(EnvironmentProblem, match="petsc4py is not importable"):
        petscenv.locate_petsc4py({})
    code = main(["run", "--n", "100", "--iterations", "5", "--np", "2", "--out", str(tmp_path)])
    assert code == 3
    assert "petsc4py is not importable" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "message"), [
    ({"KSPTRACE_MONITOR": "c", "CC": "/nonexistent/cc"},
     "KSPTRACE_MONITOR=c but the C monitor is unavailable: /nonexistent/cc did not run"),
    ({"KSPTRACE_MONITOR": "fortran"}, "KSPTRACE_MONITOR='fortran' is not a monitor"),
], ids=["no-compiler", "unknown"])
def test_a_monitor_that_cannot_be_had_is_one_error(ksptrace_cli, tmp_path: Path,
                                                   env: dict[str, str], message: str) -> None:
    out = tmp_path / "out"
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--np", "2",
                        "--out", str(out), KSPTRACE_CACHE_DIR=str(tmp_path / "cache"),
                        TMPDIR=str(tmp_path), **env)
    assert proc.returncode == EnvironmentProblem.exit_code
    assert message in one_error_line(proc.stderr)
    assert not out.exists() or list(out.iterdir()) == []


def test_without_a_compiler_the_python_monitor_stamps(ksptrace_cli, tmp_path: Path) -> None:
    from ksptrace.trace.io import read_trace

    path = tmp_path / "t.h5"
    proc = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--np", "2", "--out",
                        str(path), CC="/nonexistent/cc", KSPTRACE_CACHE_DIR=str(tmp_path / "c"),
                        TMPDIR=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert read_trace(path).attrs["monitor"] == "python"
    notes = [ln for ln in proc.stderr.splitlines() if ln.startswith("ksptrace: note:")]
    assert notes == ["ksptrace: note: the C stamping monitor is unavailable (/nonexistent/cc "
                     "did not run: [Errno 2] No such file or directory: '/nonexistent/cc'); the "
                     "Python monitor stamped this run, about 0.45 us more per iteration (trace "
                     "attribute monitor; docs/running.md: the stamping monitor)"]
    forced = ksptrace_cli("run", "--n", "100", "--iterations", "5", "--out", str(path),
                          "--overwrite", KSPTRACE_MONITOR="python")
    assert forced.returncode == 0, forced.stderr
    assert "ksptrace: note:" not in forced.stderr  # asked for: nothing to say
