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

from ksptrace.harness.noise import spin
from tests.conftest import ROOT, solver_env

SCRIPT = Path(__file__).with_name("noise_check.py")
TYPES = ["gmres", "pgmres", "bcgs", "pipebcgs", "cg", "pipecg"]


def test_spin_is_a_busy_wait_of_at_least_the_asked_time() -> None:
    import time

    cpu0, wall0 = time.process_time(), time.perf_counter()
    spent = spin(0.02)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    assert 0.02 <= spent <= wall
    assert cpu > 0.5 * wall  # it burned the core; a sleep would use almost no CPU time
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
        # The solve got slower by about what was injected on the slowest rank. The tolerance is
        # wide on purpose: the machine is shared, and the clean run has its own noise.
        extra = float(r["seconds_noisy"]) - float(r["seconds_clean"])
        spun = float(injected.sum(axis=1).max())
        assert extra > 0.5 * spun, (r["ksp"], extra, spun)
