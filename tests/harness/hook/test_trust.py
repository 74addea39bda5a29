"""What a ``ksptrace trace`` run says about itself (issue 64): the machine's load recorded as
``ksptrace run`` records it, the PETSc folder it loaded (never ``/lib``), its own summary on
stderr beside the program's stdout, and a report that shows a traced solve's set-up, its time
outside the iterations and the solves left out, without calling the hook's timing PETSc's event
log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.harness.hook import surroundings
from ksptrace.harness.monitoring import cpuload
from tests.conftest import Runner
from tests.harness.hook import tutorials
from tests.harness.hook.test_tutorials import mpiexec, traced

HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def test_a_petsc_folder_is_named_only_when_the_library_sits_in_one(tmp_path: Path) -> None:
    real = tmp_path / "usr" / "lib" / "x86_64-linux-gnu" / "libpetsc_real.so.3.18.5"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"")
    system = tmp_path / "lib" / "x86_64-linux-gnu" / "libpetsc_real.so.3.18"
    system.parent.mkdir(parents=True)
    system.symlink_to(real)
    install = tmp_path / "petscdir" / "real"
    (install / "lib" / "petsc" / "conf").mkdir(parents=True)
    (install / "lib" / "petsc" / "conf" / "petscvariables").write_text("")
    (install / "lib" / "libpetsc_real.so.3.18").symlink_to(real)
    assert surroundings.petsc_dir_of(str(system), None) is None  # not /lib
    assert surroundings.petsc_dir_of(str(install / "lib" / "libpetsc_real.so.3.18"),
                                     None) == str(install)
    assert surroundings.petsc_dir_of(str(system), str(install)) == str(install)  # same file
    other = tmp_path / "other"
    (other / "lib" / "petsc" / "conf").mkdir(parents=True)
    (other / "lib" / "petsc" / "conf" / "petscvariables").write_text("")
    assert surroundings.petsc_dir_of(str(system), str(other)) is None  # not the one loaded


def test_the_load_is_not_claimed_where_it_cannot_be_measured() -> None:
    found = cpuload.ForeignLoad(0.5, 1.0, 0, 1.0, 2)
    here = surroundings.socket.gethostname()
    assert surroundings.load_attrs(found, "srun", (here,))[0] == {}
    attrs, said = surroundings.load_attrs(found, "openmpi", (here, "elsewhere"))
    assert attrs == {}
    assert said is not None
    assert "not measured" in said
    attrs, said = surroundings.load_attrs(found, "openmpi", (here, here))
    assert attrs["foreign_cpu_share"] == 0.5
    assert said is not None
    assert "contaminated" in said
    quiet = cpuload.ForeignLoad(0.01, 0.01, 0, 1.0, 2)
    assert surroundings.load_attrs(quiet, "none", (here,)) == (
        {"foreign_cpu_share": 0.01, "foreign_cpu_seconds": 0.01, "foreign_cpu_node": 0}, None)


def test_a_traced_run_on_a_loaded_machine_records_its_load_and_says_so(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path) -> None:
    """Two busy processes that are not the command's, on this machine's CPUs while ex2 runs
    under trace: the trace records their share, trace warns on stderr, analyze flags it."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG.format(seconds=60)])
            for _ in range(os.cpu_count() or 1)]
    try:
        proc, (t,) = traced(ksptrace_cli, tmp_path / "t", [*mpiexec(1), str(programs["ex2"]),
                                                           "-m", "60", "-n", "60"])
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    share = t.attrs["foreign_cpu_share"]
    assert isinstance(share, float)
    assert share > 0.1
    assert "contaminated" in proc.stderr
    assert t.path is not None
    proc = ksptrace_cli("analyze", t.path, "--out", str(tmp_path / "r"), "--no-figures",
                        "--no-cache", "--quiet", "--mc-runs", "2", "--candidates", "norm")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert "machine-loaded" in json.dumps(summary)


def test_trace_names_the_petsc_a_system_path_program_loaded(
        ksptrace_cli: Runner, tmp_path: Path) -> None:
    """ex2 linked with no rpath loads Debian's libpetsc from /lib/x86_64-linux-gnu: the trace
    names $PETSC_DIR, whose library is that file, and never /lib."""
    pdir = tutorials.petsc_dir()
    if pdir is None:
        pytest.fail(tutorials.missing() or "no PETSc")
    source = tutorials.EXAMPLES / tutorials.SOURCES["ex2"]
    program = tmp_path / "ex2"
    subprocess.run(["mpicc", "-O1", f"-I{pdir}/include", str(source), "-o", str(program),
                    f"-L{pdir}/lib", "-lpetsc_real", "-lm"], check=True, capture_output=True,
                   timeout=300, cwd=tmp_path)
    _, (t,) = traced(ksptrace_cli, tmp_path / "t", [str(program)], PETSC_DIR=str(pdir))
    assert not str(t.attrs["petsc_library"]).startswith(str(pdir))  # the system path
    assert t.attrs["petsc_dir"] == str(pdir)


def test_the_report_of_a_traced_solve_shows_what_was_kept_apart(
        programs: dict[str, Path], ksptrace_cli: Runner, tmp_path: Path) -> None:
    proc, (t,) = traced(ksptrace_cli, tmp_path / "t", [*mpiexec(2), str(programs["ex2"]),
                                                       "-m", "30", "-n", "30"])
    assert "ex2-" in proc.stderr
    assert "left out: " in proc.stderr
    assert "ex2-" not in proc.stdout
    assert "left out" not in proc.stdout
    assert t.path is not None
    proc = ksptrace_cli("analyze", t.path, "--out", str(tmp_path / "r"), "--no-figures",
                        "--no-cache", "--quiet", "--mc-runs", "2", "--candidates", "norm")
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = "\n".join(p.read_text() for p in (tmp_path / "r").rglob("*.html"))
    assert "PETSc&#x27;s event log" not in page
    assert "PETSc's event log" not in page
    assert "MPI_Wtime around KSPSolve" in page  # how the hook timed it
    for line in ("set-up kept apart", "time outside the iterations",
                 "solves of the program left out of this trace",
                 "nested solves of KSP preonly (prefix sub_) at depth 2"):
        assert line in page, line
