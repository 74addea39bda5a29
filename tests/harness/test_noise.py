"""Injected detours: residual histories unchanged bit for bit, detours spun as drawn, time added.

Runs real solves under ``mpiexec -n 1`` and ``-n 2`` (tests/harness/noise_check.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.harness.runner.noise import spin
from tests.conftest import ROOT, solver_env

SCRIPT = Path(__file__).with_name("noise_check.py")
TYPES = ["gmres", "pgmres", "bcgs", "pipebcgs", "cg", "pipecg"]


def test_spin_is_a_busy_wait_of_at_least_the_asked_time() -> None:
    import time

    cpu0, wall0 = time.process_time(), time.perf_counter()
    spent = spin(0.02)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    assert 0.02 <= spent <= wall
    assert cpu > 0.2 * spent  # it burned the core (a sleep uses ~0.1 ms); preemption aside
    assert spin(0.0) < 1e-3


def _run(nprocs: int, noise: str) -> list[dict[str, object]]:
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found")
    proc = subprocess.run(
        [mpiexec, "-n", str(nprocs), sys.executable, str(SCRIPT), noise, *TYPES],
        env=solver_env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300,
        check=False, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.mpi
@pytest.mark.usefixtures("require_petsc")
@pytest.mark.parametrize("nprocs", [1, 2])
def test_detours_leave_residuals_identical_and_add_their_time(nprocs: int) -> None:
    noise = "fixed:value=200us,p=0.5,seed=5"
    rows = _run(nprocs, noise)
    assert [r["ksp"] for r in rows] == TYPES
    for r in rows:
        assert r["identical"], f"{r['ksp']}: residual history changed by the detours"
        planned = np.array(r["planned"])
        injected = np.array(r["injected"])
        assert planned.shape == (nprocs, 150)
        # Every armed detour is spun once, at least as long as drawn; the last iteration's
        # detour may have no PC application after it.
        hit = planned[:, :-1] > 0
        assert np.all(injected[:, :-1][hit] >= planned[:, :-1][hit])
        assert np.all(injected[planned == 0] == 0)
        # A spin ends as soon as its time is up; only preemption (a shared machine) makes one
        # run long, so the typical overshoot is tiny.
        overshoot = injected[:, :-1][hit] - planned[:, :-1][hit]
        assert float(np.median(overshoot)) < 2e-4, (r["ksp"], np.median(overshoot))


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["mpio", "gather"])
def test_run_with_noise_records_the_detours_and_keeps_the_residuals(
    ksptrace_cli, tmp_path: Path, mode: str
) -> None:
    from ksptrace.noise.draw import rank_detours
    from ksptrace.noise.spec import parse
    from ksptrace.trace.io import read_trace

    common = ["run", "--np", "2", "--n", "20000", "--iterations", "120", "--ksp", "pipebcgs",
              "--hdf5-path", mode, "--out", str(tmp_path)]
    noise = "exponential: scale=100us, p=0.3, seed=4"
    clean = ksptrace_cli(*common)
    noisy = ksptrace_cli(*common, "--noise", noise)
    assert clean.returncode == 0, clean.stderr
    assert noisy.returncode == 0, noisy.stderr
    files = sorted(tmp_path.glob("*.h5"))
    assert len(files) == 2  # a different experiment gets a different file name
    plain = next(f for f in files if "noise" not in f.name)
    other = next(f for f in files if "noise" in f.name)
    a, b = read_trace(plain), read_trace(other)
    assert a.injected_seconds is None
    assert a.attr("noise") == "none"
    assert b.attr("noise") == "exponential:scale=100us,p=0.3,per=rank,seed=4"
    assert b.attr("pc") == "jacobi"  # the configured PC, not the wrapper
    assert np.array_equal(a.residual_norms, b.residual_norms)
    spec = parse(noise)
    planned = np.stack([rank_detours(spec, p, 0, 121)[:120] for p in range(2)])
    inj = b.injected_seconds
    assert inj is not None
    assert inj.shape == (2, 120)
    # Every planned detour was spun (the last one may have no PC application after it).
    assert np.array_equal(inj[:, :-1] > 0, planned[:, :-1] > 0)
    assert np.all(inj[:, :-1] >= planned[:, :-1])


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [("lorentz:scale=1us", "unknown noise distribution 'lorentz'"),
     ("exponential:scale=-5us", "scale must be >= 0"),
     ("uniform:low=0,high=1us,p=1.5", "p is a probability")],
)
def test_bad_noise_is_one_line_and_nothing_runs(
    ksptrace_cli, tmp_path: Path, spec: str, fragment: str
) -> None:
    proc = ksptrace_cli("run", "--np", "2", "--n", "1000", "--iterations", "10",
                        "--noise", spec, "--out", str(tmp_path / "t"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("ksptrace: error: --noise:")
    assert fragment in lines[0]
    assert not (tmp_path / "t").exists() or not list((tmp_path / "t").iterdir())


@pytest.mark.mpi
def test_injected_time_shows_in_the_iterations_it_was_injected_into(
    ksptrace_cli, tmp_path: Path
) -> None:
    """One rank, a fixed 300 us detour in half the iterations: an iteration with a detour takes
    its natural time plus the detour. Medians, so that a preemption of this shared machine does
    not decide; stated tolerance: 25 % of the detour."""
    from ksptrace.trace.io import read_trace

    proc = ksptrace_cli("run", "--np", "1", "--n", "20000", "--iterations", "300", "--ksp",
                        "gmres", "--noise", "fixed:value=300us,p=0.5,seed=2",
                        "--out", str(tmp_path / "t.h5"))
    assert proc.returncode == 0, proc.stderr
    t = read_trace(tmp_path / "t.h5")
    inj = t.injected_seconds
    assert inj is not None
    times = t.iteration_seconds[0, :-1]
    hit = inj[0, :-1] > 0
    assert 100 < int(hit.sum()) < 200
    natural_hit = float(np.median(times[hit] - inj[0, :-1][hit]))
    natural_clean = float(np.median(times[~hit]))
    assert abs(natural_hit - natural_clean) < 0.25 * 300e-6, (natural_hit, natural_clean)
    assert float(np.median(times[hit]) - natural_clean) == pytest.approx(300e-6, abs=75e-6)
