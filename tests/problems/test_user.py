"""User-defined problems: ``module:function`` names, entry points, and their bad input."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.errors import UsageError
from ksptrace.problems import registry
from ksptrace.trace.read import read_trace
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "own_problem"

FAKE = '''
from ksptrace.params import Param
PARAMS = (Param("widths", int, 3, "a width"),)
NOT_A_FUNCTION = 3
def build(comm, n, options):
    """A fake problem for the tests."""
    return 5
def clashing(comm, n, options):
    return 5
clashing.params = (Param("ksp", int, 1, "clashes with --ksp"),)
def bad_params(comm, n, options):
    return 5
bad_params.params = ("nx",)
'''


@pytest.fixture
def fake_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "fakeprob_i16.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.names()  # the built-in problems registered before the snapshot
    before = dict(registry.PROBLEMS)
    yield "fakeprob_i16"
    registry.PROBLEMS.clear()
    registry.PROBLEMS.update(before)
    sys.modules.pop("fakeprob_i16", None)


def test_a_function_declares_its_problem_with_the_module_params(fake_module: str) -> None:
    info = registry.get(f"{fake_module}:build")
    assert info.name == f"{fake_module}:build"
    assert info.help == "A fake problem for the tests."
    assert [p.name for p in info.params] == ["widths"]
    assert "widths" in {p.name for p in registry.all_params()}


@pytest.mark.parametrize(("spec", "says"), [
    ("nosuch_module_i16:build", "module 'nosuch_module_i16' does not import (ModuleNotFound"),
    ("{m}:missing", "module '{m}' has no attribute 'missing'"),
    ("{m}:NOT_A_FUNCTION", "{m}.NOT_A_FUNCTION is a int, not a build function"),
    ("{m}:clashing", "parameter 'ksp' clashes with ksptrace's own --ksp"),
    ("{m}:bad_params", "parameter 'nx' is not a ksptrace.params.Param"),
    ("a:b:c", "is not of the form package.module:function"),
    ("poisson2d_unknown", "unknown problem 'poisson2d_unknown'; valid problems: iceflow, "
                          "laplace1d, or your own"),
])
def test_bad_problem_names_give_one_line(
    fake_module: str, capsys: pytest.CaptureFixture[str], spec: str, says: str
) -> None:
    with pytest.raises(UsageError, match=None) as info:
        registry.get(spec.format(m=fake_module))
    assert says.format(m=fake_module) in str(info.value)
    assert main(["run", "--problem", spec.format(m=fake_module), "--n", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ksptrace: error: {info.value}"]


def test_a_campaign_names_the_bad_problem_with_its_line(
    fake_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "x"\n[sweep]\nwidths = 4\n'
                    f'problem = "{fake_module}:nope"\n')
    assert main(["campaign", "plan", str(path)]) == 7
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"c.toml:5: problem '{fake_module}:nope': module '{fake_module}' has no attribute" \
        in err[0]


def test_user_params_are_campaign_keys_and_part_of_the_run_id(
    fake_module: str, tmp_path: Path
) -> None:
    from ksptrace.jobs.expand import load_spec

    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "x"\n[sweep]\nwidths = [4, 5]\n'
                    f'problem = "{fake_module}:build"\n')
    spec = load_spec(path)
    assert [r.param("widths") for r in spec.runs] == [4, 5]
    assert len({r.run_id for r in spec.runs}) == 2
    assert spec.runs[0].run_args()[:3] == ["run", "--problem", f"{fake_module}:build"]
    assert "--widths" in spec.runs[0].run_args()


@pytest.mark.parametrize(("line", "started"), [("from petsc4py import PETSc", "PETSc"),
                                               ("from mpi4py import MPI", "MPI")])
def test_a_module_that_starts_petsc_on_import_is_refused(  # type: ignore[no-untyped-def]
    ksptrace_cli, tmp_path: Path, line: str, started: str
) -> None:
    (tmp_path / "eager_i16.py").write_text(f"{line}\ndef build(c, n, o):\n    return None\n")
    proc = ksptrace_cli("run", "--problem", "eager_i16:build", "--out", str(tmp_path),
                        PYTHONPATH=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"ksptrace: error: problem 'eager_i16:build': importing module 'eager_i16' starts "
        f"{started}, before ksptrace can give PETSc its options; move '{line}' into the "
        "build function (see docs/own-solver.md)"]
    assert not list(tmp_path.glob("*.h5"))


@pytest.mark.mpi
def test_a_build_that_returns_no_problem_is_one_line(ksptrace_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "fakeprob_i16.py").write_text(FAKE)
    proc = ksptrace_cli("run", "--problem", "fakeprob_i16:build", "--n", "10", "--iterations",
                        "5", "--np", "2", "--out", str(tmp_path), PYTHONPATH=str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "ksptrace: error: problem 'fakeprob_i16:build': fakeprob_i16.build() returned 'int', "
        "not a ksptrace.problems.base.ProblemInstance; return an instance of a ProblemInstance "
        "subclass"]
    assert not list(tmp_path.glob("*.h5"))
    assert not list(tmp_path.glob(".*"))


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_the_example_problem_runs_from_the_cli(ksptrace_cli, tmp_path: Path, nprocs: int) -> None:  # type: ignore[no-untyped-def]
    proc = ksptrace_cli("run", "--problem", "poisson2d:build", "--n", "400", "--nx", "24",
                        "--iterations", "20", "--ksp", "cg", "--np", str(nprocs), "--out",
                        str(tmp_path), PYTHONPATH=str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    (path,) = tmp_path.glob("*.h5")
    assert path.name == f"poisson2d_build_cg_jacobi_n400_P{nprocs}_K20.h5"
    trace = read_trace(path)
    assert trace.iterations == 20
    assert trace.nprocs == nprocs
    assert trace.attrs["problem"] == "poisson2d:build"
    assert trace.attrs["nx"] == 24
    assert "ny" not in trace.attrs
    assert trace.attrs["n_global"] == 24 * 24
    assert json.loads(str(trace.attrs["problem_config"])) == {"nx": 24}


def test_the_example_problem_flags_are_listed(ksptrace_cli) -> None:  # type: ignore[no-untyped-def]
    proc = ksptrace_cli("run", "--problem", "poisson2d:build", "--help", PYTHONPATH=str(EXAMPLE))
    assert proc.returncode == 0
    assert "--nx NX" in proc.stdout
    assert "grid points in x" in proc.stdout


@pytest.mark.mpi
def test_the_example_problem_runs_from_a_campaign(ksptrace_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.toml"
    path.write_text(textwrap.dedent(f"""
        [campaign]
        name = "own"
        output = "out"
        command = '{sys.executable} -m ksptrace'
        [sweep]
        problem = "poisson2d:build"
        n = 400
        nx = [20, 24]
        iterations = 15
        nprocs = [1, 2]
    """))
    proc = ksptrace_cli("campaign", "run", str(path), "--backend", "local",
                        PYTHONPATH=str(EXAMPLE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 runs: 4 done" in proc.stdout
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    seen = set()
    for run in manifest["runs"]:
        trace = read_trace(tmp_path / "out" / run["trace"])
        assert trace.attrs["run_id"] == run["run_id"]
        assert trace.nprocs == run["nprocs"]
        seen.add((trace.attrs["nx"], trace.nprocs, trace.attrs["n_global"]))
    assert seen == {(20, 1, 400), (20, 2, 400), (24, 1, 576), (24, 2, 576)}


ENTRY = """[ksptrace.problems]
poisson2d-ep = poisson2d:build
broken-ep = nosuch_module_i16:build
"""


@pytest.mark.mpi
def test_an_entry_point_problem_is_listed_and_runs(ksptrace_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dist = tmp_path / "own_problems-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: own-problems\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY)
    path = f"{tmp_path}:{EXAMPLE}"
    listed = ksptrace_cli("problems", PYTHONPATH=path)
    assert listed.returncode == 0
    assert "poisson2d-ep:" in listed.stdout
    assert "--nx" in listed.stdout
    assert ("broken-ep: cannot be loaded: problem 'broken-ep (entry point nosuch_module_i16:build)"
            "': module 'nosuch_module_i16' does not import") in listed.stdout
    assert "laplace1d:" in listed.stdout
    proc = ksptrace_cli("run", "--problem", "poisson2d-ep", "--n", "100", "--iterations", "5",
                        "--np", "1", "--out", str(tmp_path), PYTHONPATH=path)
    assert proc.returncode == 0, proc.stderr
    (trace,) = (read_trace(p) for p in tmp_path.glob("*.h5"))
    assert trace.attrs["problem"] == "poisson2d-ep"


def test_the_example_campaign_sweeps_the_problem_parameters(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from ksptrace.jobs.expand import load_spec

    monkeypatch.syspath_prepend(str(EXAMPLE))
    spec = load_spec(EXAMPLE / "campaign.toml")
    assert {r.param("problem") for r in spec.runs} == {"poisson2d:build"}
    assert sorted({r.param("nx") for r in spec.runs}) == [48, 64]
    assert len({r.run_id for r in spec.runs}) == len(spec.runs) == 8


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_the_example_time_loop_records_every_step(tmp_path: Path, nprocs: int) -> None:
    import shutil
    import subprocess

    from tests.conftest import solver_env

    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found")
    path = tmp_path / "loop.h5"
    proc = subprocess.run(
        [mpiexec, "-n", str(nprocs), sys.executable, str(EXAMPLE / "timeloop.py"), str(path),
         "-ksp_type", "cg", "-log_view"], env=solver_env(PYTHONPATH=f"{EXAMPLE}:{ROOT}"),
        cwd=ROOT,
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = [int(line.split()[2]) for line in proc.stdout.splitlines()
               if line.startswith("step ")]
    trace = read_trace(path)
    assert trace.solves is not None
    assert trace.solves.iterations.tolist() == printed
    reasons = [line.split(", ")[-1] for line in proc.stdout.splitlines()
               if line.startswith("step ")]
    assert reasons == list(trace.solves.reasons)  # by name (CONVERGED_RTOL), not a code
    assert all(r.startswith("CONVERGED_") for r in reasons)
    assert len(printed) == 5
    assert len(set(printed)) > 1
    assert trace.attrs["problem"] == "poisson2d-timeloop"
    assert trace.attrs["petsc_options"] == "-ksp_type cg -log_view"  # the program's options
    # each solve is timed by MPI_Wtime in its pre- and post-solve hooks, with no log of
    # ksptrace's own: together close to -log_view's KSPSolve (max over ranks), which starts
    # before the pre-solve hook (set-up) and ends before the post-solve one
    (logged,) = [line.split() for line in proc.stdout.splitlines()
                 if line.startswith("KSPSolve ")]
    assert logged[1] == "5"
    hooks = trace.solves.seconds.sum(axis=1).max()
    # A rank descheduled between the solve's end and its post-solve hook (a loaded machine:
    # 0.046 s against 0.025 s once in the suite) adds to the hooks alone: the record says
    # whether other processes took CPU during the solves, and only then is the gap allowed.
    foreign = trace.attrs.get("foreign_cpu_share")
    loaded = not isinstance(foreign, int | float) or foreign > 0.05
    assert hooks == pytest.approx(float(logged[3]), rel=0.15, abs=0.01 * len(printed) * loaded)
    assert hooks > 0.5 * float(logged[3])  # never a fraction of the solve, loaded or not


@pytest.mark.parametrize(("backend", "suffix"), [("slurm", ".sbatch"), ("pbs", ".pbs")])
def test_scheduler_scripts_carry_the_user_problem_and_its_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str, suffix: str
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    out = tmp_path / "out"
    assert main(["campaign", "run", str(EXAMPLE / "campaign.toml"), "--backend", backend,
                 "--dry-run", "--out", str(out)]) == 0
    (script,) = (out / "scripts" / backend).glob(f"*{suffix}")
    text = script.read_text()
    assert "--problem poisson2d:build" in text
    assert "--nx 48" in text
    assert "--nx 64" in text


@pytest.mark.mpi
def test_the_documented_record_example_runs_with_petsc_dir_unset(tmp_path: Path) -> None:
    """docs/own-solver.md's command as written, in the venv ``make setup`` made, with no
    PETSC_DIR and no PYTHONPATH: the venv's own python finds Debian's petsc4py."""
    import shutil
    import subprocess

    from tests.conftest import solver_env

    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found")
    env = solver_env()
    env.pop("PETSC_DIR", None)
    env.pop("PYTHONPATH", None)
    path = tmp_path / "timeloop.h5"
    proc = subprocess.run(
        [mpiexec, "-n", "2", sys.executable, "timeloop.py", str(path), "-ksp_type", "cg"],
        env=env, cwd=EXAMPLE, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = read_trace(path)
    assert trace.nprocs == 2
    assert trace.solves is not None
    assert trace.solves.count == 5
