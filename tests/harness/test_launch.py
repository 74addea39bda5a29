"""Launcher detection and flags (no MPI needed), and running under an external mpiexec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.harness.launching.launch import MpiExec
from ksptrace.harness.launching.mpienv import launched_size, under_mpi_launcher
from ksptrace.trace.read import read_trace
from tests.conftest import ROOT, solver_env


def test_openmpi_flags() -> None:
    mpi = MpiExec("/usr/bin/mpiexec", "openmpi")
    assert mpi.flags(2, cpus=2, as_root=False) == []
    assert mpi.flags(2, cpus=2, as_root=True) == ["--allow-run-as-root"]
    assert mpi.flags(4, cpus=2, as_root=True) == ["--allow-run-as-root", "--oversubscribe"]
    assert mpi.command(4, ["--oversubscribe"], ["python"]) == [
        "/usr/bin/mpiexec", "--oversubscribe", "-n", "4", "python"]


def test_mpich_needs_no_flags() -> None:
    assert MpiExec("/usr/bin/mpiexec", "mpich").flags(8, cpus=2, as_root=True) == []


def test_launcher_detection() -> None:
    assert not under_mpi_launcher({})
    assert under_mpi_launcher({"OMPI_COMM_WORLD_SIZE": "2"})
    assert under_mpi_launcher({"PMI_SIZE": "4"})
    assert under_mpi_launcher({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0"})
    assert not under_mpi_launcher({"SLURM_PROCID": "0"})  # a batch script is not a task
    assert launched_size({"OMPI_COMM_WORLD_SIZE": "3"}) == 3
    assert launched_size({}) is None


@pytest.mark.mpi
def test_runs_under_an_external_mpiexec(require_petsc: None, tmp_path: Path) -> None:
    path = tmp_path / "ext.h5"
    env = solver_env()
    from ksptrace.harness.petsc.petscenv import locate_petsc4py

    locate_petsc4py(env)
    proc = subprocess.run(
        ["mpiexec", "-n", "2", sys.executable, "-m", "ksptrace", "run", "--n", "1000",
         "--iterations", "10", "--out", str(path)],
        env=env, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    assert trace.nprocs == 2
    assert trace.attrs["launcher"] == "external"
    assert proc.stdout.count("wrote") == 1  # rank 0 only
