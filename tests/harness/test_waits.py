"""Wait time in MPI reductions per rank and iteration (issue 65), checked against known truth.

The interposer (ksptrace/harness/monitoring/mpi_wait.c) is checked on its own under Open MPI and
MPICH (tests/harness/wait_check.py: mpi4py's calls, a sleep of known length on rank 1), then in real
runs: detours of 1 ms injected on rank 1 only must show as rank 0's wait in the same
iterations, and nobody waits at P = 1, on Debian's PETSc (Open MPI) and on PETSc built against
MPICH (``make stack-mpich-petsc``; skipped with that command where it is not built).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ksptrace.harness.monitoring import mpiwait
from ksptrace.trace.model import Trace
from tests.conftest import ROOT, Runner, solver_env
from tests.stack import stacks

SCRIPT = Path(__file__).with_name("wait_check.py")
DETOUR = 1e-3
NOISE_RANK1 = "fixed:value=1ms,p=0.1,ranks=1"


def test_marks_become_each_iterations_wait_and_reductions() -> None:
    marks = np.array([[0.5, 3.0], [0.75, 5.0], [0.75, 5.0], [2.0, 9.0]])
    waits, calls = mpiwait.per_iteration(marks)
    assert waits.tolist() == [0.25, 0.0, 1.25]
    assert calls.tolist() == [2, 0, 4]
    assert calls.dtype == np.int64


def test_a_bad_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from ksptrace.errors import EnvironmentProblem

    monkeypatch.setenv(mpiwait.WAITS_ENV, "sometimes")
    with pytest.raises(EnvironmentProblem, match="use auto, on or off"):
        mpiwait.mode()


def _interposer_rows(command: list[str], python: str, env: dict[str, str],
                     nprocs: int = 2) -> list[dict]:
    proc = subprocess.run([*command, "-n", str(nprocs), python, str(SCRIPT)], env=env,
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith('{"ranks"')]
    rows = sorted(json.loads(line)["ranks"], key=lambda r: r["rank"])
    assert [r["rank"] for r in rows] == list(range(nprocs))
    return rows


def _check_alone(rows: list[dict], library: str) -> None:
    """One rank: both reductions counted, and no wait to speak of (nobody is late)."""
    (row,) = rows
    assert row["library"] == library
    steps = {s["what"]: s for s in row["steps"]}
    assert set(steps) == {"allreduce", "iallreduce"}
    for step in steps.values():
        assert step["calls"] == 1
        assert step["seconds"] < 1e-3  # a reduction over one rank returns at once


def _check_interposer(rows: list[dict], library: str) -> None:
    from tests.harness.wait_check import DELAY

    assert all(r["library"] == library for r in rows)
    steps = {s["what"]: s for s in rows[0]["steps"]}
    # rank 0 waits for rank 1's sleep inside the reduction, blocking or not ...
    assert steps["allreduce"]["seconds"] >= 0.8 * DELAY
    assert steps["allreduce"]["calls"] == 1
    assert steps["iallreduce"]["seconds"] >= 0.8 * DELAY
    assert steps["iallreduce"]["calls"] == 1
    # ... but a receive's wait is no reduction's, though it passed through MPI_Wait
    assert steps["irecv"]["seconds"] == 0
    assert steps["irecv"]["calls"] == 0
    assert rows[0]["by_entry"]["MPI_Wait"][1] == 2  # both Waits were seen
    assert rows[0]["by_entry"]["MPI_Wait"][0] >= 0.8 * DELAY  # the Iallreduce's carried time
    late = {s["what"]: s for s in rows[1]["steps"]}
    assert late["allreduce"]["seconds"] < 0.5 * DELAY  # the late rank hardly waits


@pytest.mark.mpi
def test_the_interposer_times_reductions_under_open_mpi() -> None:
    import sys

    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found")
    env = solver_env(PYTHONPATH=str(ROOT))
    _check_interposer(_interposer_rows([mpiexec], sys.executable, env), "Open")
    _check_alone(_interposer_rows([mpiexec], sys.executable, env, 1), "Open")


RELRO_SOURCE = """
#include <mpi.h>
int ksptrace_test_allreduce(void) {
  double x = 1.0, y = 0.0;
  return MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
"""


@pytest.mark.mpi
def test_read_only_plt_slots_are_rewritten_too(tmp_path: Path) -> None:
    """A library linked with full RELRO (``-z now``), whose PLT slots are read-only."""
    import sys

    mpicc, mpiexec = shutil.which("mpicc"), shutil.which("mpiexec")
    if mpicc is None or mpiexec is None:
        pytest.skip("needs mpicc and mpiexec (Debian: libopenmpi-dev, openmpi-bin)")
    source, lib = tmp_path / "relro.c", tmp_path / "librelro.so"
    source.write_text(RELRO_SOURCE)
    subprocess.run([mpicc, "-shared", "-fPIC", "-O1", "-Wl,-z,relro,-z,now", "-o", str(lib),
                    str(source)], check=True, timeout=120)
    dynamic = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                             check=True).stdout
    assert "BIND_NOW" in dynamic  # the slots lie in the RELRO segment, read-only once loaded
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable,
                           str(Path(__file__).with_name("relro_check.py")), str(lib)],
                          env=solver_env(PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = sorted((json.loads(line) for line in proc.stdout.splitlines()
                   if line.startswith("{")), key=lambda r: r["rank"])
    assert [r["calls"] for r in rows] == [1, 1]
    assert rows[0]["seconds"] >= 0.16  # rank 0 waited for rank 1's 0.2 s sleep


@pytest.mark.mpi
def test_the_interposer_times_reductions_under_mpich() -> None:
    from tests.collectives.test_mpich import _env, mpich_python

    python = mpich_python()
    command = ["/usr/bin/mpiexec.mpich"]
    _check_interposer(_interposer_rows(command, python, _env(python)), "MPICH")
    _check_alone(_interposer_rows(command, python, _env(python), 1), "MPICH")


def _run(cli: Runner, tmp: Path, nprocs: int, ksp: str, noise: str, *extra: str,
         library: str = "openmpi", **env: str) -> Trace:
    """A ``ksptrace run`` on Debian's PETSc and Open MPI, or (``library="mpich"``) with the
    MPICH stack's python, PETSc and mpiexec.mpich."""
    from ksptrace.trace.io import read_trace

    out = tmp / f"{ksp}-{nprocs}.h5"
    args = ["run", "--np", str(nprocs), "--n", "20000", "--iterations", "300", "--ksp", ksp,
            "--noise", noise, "--out", str(out), *extra]
    if library == "mpich":
        found = stacks.mpich_petsc()
        if isinstance(found, str):
            pytest.skip(found)
        proc = found[0].ksptrace(*args, env=solver_env(**env))
    else:
        proc = cli(*args, **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    trace = read_trace(out)
    assert ("MPICH" in str(trace.attrs["mpi_library"])) == (library == "mpich")
    return trace


@pytest.mark.mpi
@pytest.mark.parametrize("library", ["openmpi", "mpich"])
def test_rank_0_waits_for_rank_1s_detours(ksptrace_cli: Runner, tmp_path: Path,
                                          library: str) -> None:
    trace = _run(ksptrace_cli, tmp_path, 2, "gmres", NOISE_RANK1, "--hdf5-path", "auto",
                 library=library)
    assert trace.wait_seconds is not None
    assert trace.mpi_calls is not None
    assert trace.injected_seconds is not None
    assert trace.attrs["wait_accounting"] == mpiwait.ACCOUNTING
    assert "MPI_Allreduce" in str(trace.attrs["wait_by_entry"])
    inj, waits = trace.injected_seconds, trace.wait_seconds
    late = (inj[1] > 0) & (inj[0] == 0)
    assert late.sum() >= 10, late.sum()  # p = 0.1 of 300 iterations
    # rank 0 waits about the detour (the spin is at least 1 ms, so use what was spun)
    ratio = np.median(waits[0, late] / inj[1, late])
    assert ratio >= 0.8, ratio
    # rank 1 hardly waits, unless rank 0 was itself descheduled (a loaded machine: both ranks
    # spin during the detour); such iterations are told by rank 0's own numbers alone, its
    # work or its wait longer than usual, never by rank 1's wait, which is what is checked
    work0 = trace.iteration_seconds[0] - waits[0]
    clean = late & (work0 < np.median(work0) + 0.5 * DETOUR) & (waits[0] < inj[1] + 0.5 * DETOUR)
    if clean.sum() < 0.3 * late.sum():
        pytest.skip(f"the machine descheduled rank 0 in {late.sum() - clean.sum()} of "
                    f"{late.sum()} detour iterations; rerun on a quieter machine")
    assert np.median(waits[1, clean]) < 0.2 * DETOUR, (clean.sum(), late.sum())
    # without a detour neither rank waits long, typically
    assert np.median(waits[0, ~late]) < 0.2 * DETOUR
    # waits fit inside the iterations, and GMRES makes the same reductions on every rank
    assert (waits <= trace.iteration_seconds).all()
    assert (trace.mpi_calls >= 1).all()
    assert (trace.mpi_calls[0] == trace.mpi_calls[1]).all()


@pytest.mark.mpi
@pytest.mark.parametrize("library", ["openmpi", "mpich"])
def test_alone_nobody_waits(ksptrace_cli: Runner, tmp_path: Path, library: str) -> None:
    trace = _run(ksptrace_cli, tmp_path, 1, "gmres", "fixed:value=1ms,p=0.1,ranks=0",
                 library=library)
    assert trace.wait_seconds is not None
    assert trace.injected_seconds is not None
    assert trace.mpi_calls is not None
    detoured = trace.injected_seconds[0] > 0
    assert detoured.sum() >= 10
    # its own detours are work, not waiting; on one rank PETSc's vectors are sequential and
    # hardly any reduction reaches MPI at all
    assert trace.mpi_calls.sum() < 0.1 * trace.iterations
    assert np.median(trace.wait_seconds[0]) < 20e-6
    assert trace.wait_seconds.sum() < 0.01 * trace.iteration_seconds.sum()


@pytest.mark.mpi
@pytest.mark.parametrize("library", ["openmpi", "mpich"])
def test_a_pipelined_method_hides_the_detour_from_its_reduction(ksptrace_cli: Runner,
                                                                 tmp_path: Path,
                                                                 library: str) -> None:
    """PGMRES starts its MPI_Iallreduce before the preconditioner (where rank 1 detours) and
    waits for it after: at P = 2 (Open MPI and MPICH alike), rank 1's contribution is already
    sent, so rank 0's reduction wait stays small; rank 1's delay reaches rank 0 one iteration
    later through the next MatMult's halo exchange, which is not a reduction and not counted."""
    trace = _run(ksptrace_cli, tmp_path, 2, "pgmres", NOISE_RANK1, "--hdf5-path", "gather",
                 library=library)
    assert trace.attrs["hdf5_path"] == "gather"  # the GMRES run: auto (MPI-IO where h5py has it)
    assert trace.wait_seconds is not None
    assert trace.mpi_calls is not None
    by_entry = str(trace.attrs["wait_by_entry"])
    assert "MPI_Iallreduce" in by_entry, by_entry
    assert "MPI_Wait " in by_entry, by_entry
    assert (trace.mpi_calls >= 1).all()
    inj = trace.injected_seconds
    assert inj is not None
    late = np.flatnonzero((inj[1, :-1] > 0) & (inj[0, :-1] == 0) & (inj[1, 1:] == 0))
    assert late.size >= 10, late.size
    waits, times = trace.wait_seconds, trace.iteration_seconds
    assert np.median(waits[0, late]) < 0.2 * DETOUR  # the overlap absorbed the reduction's
    typical = np.median(times[0])
    assert np.median(times[0, late + 1] - typical) >= 0.8 * DETOUR  # the delay still came
    assert np.median(waits[0, late + 1]) < 0.2 * DETOUR  # ... but not through a reduction


@pytest.mark.mpi
def test_wait_accounting_can_be_turned_off(ksptrace_cli: Runner, tmp_path: Path) -> None:
    trace = _run(ksptrace_cli, tmp_path, 1, "gmres", "none", KSPTRACE_MPI_WAITS="off")
    assert trace.wait_seconds is None
    assert trace.mpi_calls is None
    assert trace.attrs["wait_accounting"] == "none (KSPTRACE_MPI_WAITS=off)"


@pytest.mark.mpi
def test_the_python_monitor_copies_the_waits_too(ksptrace_cli: Runner, tmp_path: Path) -> None:
    trace = _run(ksptrace_cli, tmp_path, 2, "gmres", NOISE_RANK1, KSPTRACE_MONITOR="python")
    assert trace.attrs["monitor"] == "python"
    assert trace.wait_seconds is not None
    assert trace.mpi_calls is not None
    assert (trace.mpi_calls >= 1).all()
    assert (trace.mpi_calls[0] == trace.mpi_calls[1]).all()
    assert trace.injected_seconds is not None
    late = (trace.injected_seconds[1] > 0) & (trace.injected_seconds[0] == 0)
    assert np.median(trace.wait_seconds[0, late] / trace.injected_seconds[1, late]) >= 0.8
