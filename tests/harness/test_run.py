"""End-to-end runs of laplace1d under mpiexec -n 1 and -n 2, read back from their traces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace.model import Trace
from ksptrace.trace.read import read_trace
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi

KSP_TYPES = ("gmres", "pgmres", "bcgs", "pipebcgs")
N = 20_000
K = 60


@pytest.fixture(scope="module")
def traces(ksptrace_cli, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Trace]:
    out = tmp_path_factory.mktemp("runs")
    found = {}
    for nprocs in (1, 2):
        for ksp in KSP_TYPES:
            path = out / f"{ksp}-{nprocs}.h5"
            proc = ksptrace_cli(
                "run", "--n", str(N), "--ksp", ksp, "--iterations", str(K),
                "--np", str(nprocs), "--out", str(path),
            )
            assert proc.returncode == 0, proc.stderr
            assert f"wrote {path}" in proc.stdout
            found[(ksp, nprocs)] = read_trace(path)
    return found


@pytest.mark.parametrize("nprocs", [1, 2])
@pytest.mark.parametrize("ksp", KSP_TYPES)
def test_exactly_k_iterations(traces: dict[tuple[str, int], Trace], ksp: str, nprocs: int) -> None:
    trace = traces[(ksp, nprocs)]
    assert trace.iterations == K
    assert trace.attrs["iterations_done"] == K
    assert trace.attrs["ksp"] == ksp
    assert trace.nprocs == nprocs
    assert trace.iteration_seconds.shape == (nprocs, K)
    assert (trace.iteration_seconds > 0).all()
    assert trace.attrs["converged_reason"] == "DIVERGED_MAX_IT"


def test_gmres_residuals_agree_on_one_and_two_ranks(traces: dict[tuple[str, int], Trace]) -> None:
    one = traces[("gmres", 1)].residual_norms
    two = traces[("gmres", 2)].residual_norms
    # Only the summation order of dot products differs between 1 and 2 ranks.
    np.testing.assert_allclose(two, one, rtol=1e-10, atol=0)
    assert one[-1] < one[0]


@pytest.mark.parametrize("nprocs", [1, 2])
@pytest.mark.parametrize("ksp", KSP_TYPES)
def test_iteration_sum_matches_solve_time(
    ksptrace_cli, tmp_path: Path, ksp: str, nprocs: int
) -> None:
    """The monitor's stamps bracket the iterations; KSPSolve adds only the initial residual and
    the final solution update (the KSP is set up before the timed solve).

    Stated tolerance, per rank: the stamped span is at most the event-log KSPSolve time and at
    least 90% of it minus 5 ms (a rank can wait for a descheduled peer before its first
    iteration; on a loaded 2-core machine that is the noise).
    """
    path = tmp_path / "t.h5"
    proc = ksptrace_cli("run", "--n", "100000", "--ksp", ksp, "--iterations", "300",
                        "--np", str(nprocs), "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    span = trace.iteration_seconds.sum(axis=1)
    solve = trace.solve_seconds
    assert (span <= solve * 1.0001 + 1e-6).all(), (span, solve)
    assert (span >= 0.9 * solve - 5e-3).all(), (span, solve)


def test_metadata_is_complete(traces: dict[tuple[str, int], Trace]) -> None:
    trace = traces[("gmres", 2)]
    a = trace.attrs
    for key in ("schema_version", "problem", "n", "n_global", "nnz", "ksp", "pc", "iterations",
                "restart", "nprocs", "ranks_per_node", "petsc_version", "petsc4py_version",
                "mpi4py_version", "mpi_library", "ksptrace_version", "start_utc",
                "command_line", "petsc_options", "converged_reason", "oversubscribed",
                "solve_max", "solve_min", "solve_mean", "launcher_flags"):
        assert key in a, key
    assert a["nnz"] == 3 * N - 2
    assert a["n_global"] == N
    assert a["restart"] == 30
    assert a["openblas_num_threads"] == "1"
    assert a["solve_max"] == pytest.approx(trace.solve_seconds.max())
    assert "--np 2" in str(a["command_line"])
    assert trace.node_ids.tolist() == [0, 0]
    assert trace.ranks_per_node == 2


@pytest.mark.parametrize("ksp", ["gmres", "bcgs", "pgmres"])
def test_solution_converges_to_ones(ksptrace_cli, tmp_path: Path, ksp: str) -> None:
    path = tmp_path / "conv.h5"
    # bcgs never reads -ksp_gmres_restart, and an unused option is refused (test_options.py)
    options = [] if ksp == "bcgs" else ["-ksp_gmres_restart", "100"]
    proc = ksptrace_cli("run", "--n", "40", "--ksp", ksp, "--iterations", "100", "--np", "2",
                        "--out", str(path), *options)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    assert trace.attrs["solution_error"] < 1e-10
    assert trace.attrs["petsc_options"] == " ".join(options)
    assert trace.attrs["restart"] == (0 if ksp == "bcgs" else 100)


@pytest.mark.parametrize("mode", ["mpio", "gather"])
def test_both_hdf5_write_paths(ksptrace_cli, tmp_path: Path, mode: str) -> None:
    path = tmp_path / f"{mode}.h5"
    proc = ksptrace_cli("run", "--n", "1000", "--iterations", "20", "--np", "2",
                        "--hdf5-path", mode, "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    assert trace.attrs["hdf5_path"] == mode
    assert trace.nprocs == 2
    # each rank wrote its own row: two ranks can stamp the same start (both leave the same
    # barrier), but not the same 21 times
    assert not np.array_equal(trace.stamps[0], trace.stamps[1])
    assert (trace.iteration_seconds > 0).all()


@pytest.mark.parametrize("mode", ["mpio", "gather"])
def test_killed_mid_write_leaves_no_trace(ksptrace_cli, tmp_path: Path, mode: str) -> None:
    path = tmp_path / "killed.h5"
    proc = ksptrace_cli("run", "--n", "1000", "--iterations", "20", "--np", "2",
                        "--hdf5-path", mode, "--out", str(path), KSPTRACE_FAULT="kill-during-write")
    assert proc.returncode != 0
    assert not path.exists()
    assert "Traceback" not in proc.stderr
    left = list(tmp_path.glob(".killed.h5.tmp-*"))
    assert len(left) == 1  # rank 0 died mid-write: its partial file is there
    proc = ksptrace_cli("run", "--n", "1000", "--iterations", "20", "--out", str(tmp_path),
                        "--tag", "next")
    assert proc.returncode == 0, proc.stderr
    assert "removed 1 temporary file(s)" in proc.stderr
    assert list(tmp_path.glob(".*.tmp-*")) == []  # the next run in the folder swept it


def test_timed_kills_leave_nothing_after_the_next_run(tmp_path: Path) -> None:
    """SIGKILL the whole run at delays spread over its life (launch, solve, write, publish);
    whatever each kill left, the next run in the folder leaves no temporary file."""
    delays = [0.3 * k for k in range(1, 13)]
    for k, delay in enumerate(delays):
        proc = subprocess.Popen(
            [sys.executable, "-m", "ksptrace", "run", "--n", "20000", "--iterations", "300",
             "--np", "2", "--out", str(tmp_path), "--tag", f"k{k}x"],
            env=solver_env(), cwd=ROOT, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        subprocess.run(["pkill", "-KILL", "-f", f"tag k{k}x"], check=False)
    time.sleep(0.5)  # orphaned ranks of the killed group are gone by now (killpg)
    proc = subprocess.run(
        [sys.executable, "-m", "ksptrace", "run", "--n", "1000", "--iterations", "10",
         "--out", str(tmp_path), "--tag", "after"],
        env=solver_env(), cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.glob(".*.tmp-*")) == []
    for trace in tmp_path.glob("*.h5"):
        read_trace(trace)  # every published trace is whole


def test_restart_and_warmup(ksptrace_cli, tmp_path: Path) -> None:
    path = tmp_path / "r.h5"
    proc = ksptrace_cli("run", "--n", "2000", "--ksp", "pgmres", "--iterations", "25",
                        "--restart", "10", "--warmup", "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    assert trace.attrs["restart"] == 10
    assert trace.attrs["warmup"] is True
    assert trace.iterations == 25
