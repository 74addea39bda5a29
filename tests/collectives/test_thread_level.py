"""The thread level of the collectives benchmark (issue 66): MPI started as a C benchmark's
``MPI_Init`` starts it, and the level recorded is the one MPI gave, whatever MPI_T asks."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi

LEVELS = {"single": 0, "funneled": 1, "serialized": 2, "multiple": 3}


def _rank(script: str, **env: str) -> list[str]:
    if shutil.which("mpiexec") is None:
        pytest.skip("needs mpiexec")
    proc = subprocess.run(["mpiexec", "-n", "1", sys.executable, "-c", script],
                          env=solver_env(**env), capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


@pytest.mark.parametrize("level", ["funneled", "multiple"])
def test_mpi_t_leaves_the_thread_level_mpi_runs_at(level: str) -> None:
    """Open MPI's first MPI_T_init_thread sets the level MPI_Query_thread answers to the one it
    asked for: asking for single made a funneled run record 'single' (with its locks on)."""
    said = _rank(
        "import mpi4py\n"
        f"mpi4py.rc.thread_level = {level!r}\n"
        "from mpi4py import MPI\n"
        "from ksptrace.collectives import mpit\n"
        "before = MPI.Query_thread()\n"
        "held = mpit.read_int_cvars(['coll_tuned_use_dynamic_rules'])\n"
        "mpit.descriptions(['coll_tuned_use_dynamic_rules'])\n"
        "print(before, MPI.Query_thread(), held['coll_tuned_use_dynamic_rules'] is not None)\n")
    assert said == [str(LEVELS[level]), str(LEVELS[level]), "True"]


def test_start_mpi_calls_mpi_init() -> None:
    """``MPI_Init``, as the separate C program: single, and Open MPI's OMPI_MPI_THREAD_LEVEL
    (read by MPI_Init only, not by MPI_Init_thread) is honoured as it is for a C program."""
    script = ("from ksptrace.collectives.mpistart import start_mpi, thread_level\n"
              "MPI = start_mpi()\n"
              "print(thread_level(), MPI.Get_library_version().startswith('Open MPI'))\n")
    level, openmpi = _rank(script)
    assert level == "single"
    if openmpi == "True":
        assert _rank(script, OMPI_MPI_THREAD_LEVEL="1") == ["funneled", "True"]
