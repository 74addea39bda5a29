"""Every KSP type of the PETSc it runs on (3.18, 3.26) on a small laplace1d with Jacobi:
traced with exactly K stamped iterations, or refused with one message that says why this type
cannot be traced.

All types run in one Python process (``execute`` once per type) to keep this fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksptrace.trace.read import read_trace
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi

N, K = 1000, 25

PIPELINED_EXTRA_UPDATE = frozenset({"pipecg", "pipecgrr", "pipecr", "pipeprcg", "ibcgs"})
"""Types whose PETSc iteration count is K + 1: the last pass reports iteration K to the monitor,
then updates the solution once more."""

REFUSED: dict[str, str] = {
    "bcgsl": "reports only one iteration in 2 to the monitor (0, 2, 4, 6, ...), so single "
             "iterations cannot be timed; use another KSP type, or -ksp_bcgsl_ell 1",
    "cgls": "never reported iteration 0 of 0..25 to the monitor",
    "fetidp": "cannot be traced: it needs a MATIS operator",
    "hpddm": "is not available in this PETSc build",
    "none": "cannot be traced: it applies the preconditioner once",
    "pipecg2": "reports only one iteration in 2 to the monitor",
    "preonly": "cannot be traced: it applies the preconditioner once",
    "python": "cannot be traced: it runs a Python KSP implementation",
    "tsirm": "cannot be traced: it needs -pc_type ksp",
    "eksm": "In KSPEKSM the PC type must be PCNONE",  # PETSc's own refusal of Jacobi
}

TRACED = (
    "bcgs", "bicg", "cg", "cgne", "cgs", "chebyshev", "cr", "dgmres", "fbcgs", "fbcgsr", "fcg",
    "fgmres", "gcr", "gltr", "gmres", "groppcg", "ibcgs", "lcd", "lgmres", "lsqr", "minres",
    "nash", "pgmres", "pipebcgs", "pipecg", "pipecgrr", "pipecr", "pipefcg", "pipefgmres",
    "pipegcr", "pipelcg", "pipeprcg", "qcg", "qmrcgs", "richardson", "stcg", "symmlq", "tcqmr",
    "tfqmr", "idr",
)

SINCE_3_18 = frozenset({"idr", "eksm"})
"""Types PETSc added after 3.18 (both in 3.26): classified above, absent from older builds."""

DRIVER = """
import json, sys
from pathlib import Path
from ksptrace.errors import KsptraceError
from ksptrace.harness.petsc.petscenv import init_petsc
from ksptrace.harness.runner.run import execute
from ksptrace.harness.config.settings import RunSettings

out, n, k = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
petsc = init_petsc([])
names = sorted(v for key, v in vars(petsc.KSP.Type).items()
               if not key.startswith("_") and isinstance(v, str))
results = {}
for name in names:
    path = out / f"{name}.h5"
    settings = RunSettings(problem="laplace1d", n=n, ksp=name, pc="jacobi", iterations=k,
                           restart=None, warmup=False, hdf5_path="gather", out=path)
    try:
        execute(settings)
    except KsptraceError as exc:
        results[name] = {"refused": str(exc)}
    else:
        results[name] = {"path": str(path)}
print(json.dumps(results))
"""


def _every_type(out: Path, monitor: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(out), str(N), str(K)],
        env=solver_env(KSPTRACE_MONITOR=monitor),
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


@pytest.fixture(scope="module")
def outcomes(require_petsc: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every type stamped by the C monitor (KSPTRACE_MONITOR=c: an error if it cannot build)."""
    return _every_type(tmp_path_factory.mktemp("ksp-types"), "c")


@pytest.fixture(scope="module")
def python_outcomes(require_petsc: None, tmp_path_factory: pytest.TempPathFactory
                    ) -> dict[str, Any]:
    """The same, stamped by the Python monitor."""
    return _every_type(tmp_path_factory.mktemp("ksp-types-python"), "python")


def test_every_type_is_classified(outcomes: dict[str, Any]) -> None:
    classified = set(TRACED) | set(REFUSED)
    assert set(outcomes) <= classified, set(outcomes) - classified
    assert classified - set(outcomes) <= SINCE_3_18, classified - set(outcomes)


def _present(outcomes: dict[str, Any], ksp: str) -> None:
    if ksp not in outcomes and ksp in SINCE_3_18:
        pytest.skip(f"this PETSc has no KSP type {ksp} (added after 3.18)")


@pytest.mark.parametrize("ksp", TRACED)
def test_traced_with_exactly_k_stamped_iterations(outcomes: dict[str, Any], ksp: str) -> None:
    _present(outcomes, ksp)
    assert "refused" not in outcomes[ksp], outcomes[ksp]
    trace = read_trace(outcomes[ksp]["path"])
    assert trace.attrs["ksp"] == ksp
    assert trace.attrs["monitor"] == "c"
    assert trace.iterations == K
    assert trace.attrs["iterations_done"] == K
    assert trace.stamps.shape == (1, K + 1)
    assert (trace.iteration_seconds > 0).all()
    extra = 1 if ksp in PIPELINED_EXTRA_UPDATE else 0
    assert trace.attrs["petsc_iterations"] == K + extra


def test_the_c_and_the_python_monitor_see_the_same_iterations(
        outcomes: dict[str, Any], python_outcomes: dict[str, Any]) -> None:
    """Same types traced, same refusals, bit-identical residual norms, one stamp per call."""
    assert {k: "path" in v for k, v in outcomes.items()} == {
        k: "path" in v for k, v in python_outcomes.items()}
    for ksp in (t for t in TRACED if t in outcomes):
        c, py = read_trace(outcomes[ksp]["path"]), read_trace(python_outcomes[ksp]["path"])
        assert py.attrs["monitor"] == "python"
        np.testing.assert_array_equal(c.residual_norms, py.residual_norms, err_msg=ksp)
        assert c.stamps.shape == py.stamps.shape
        assert c.attrs["petsc_iterations"] == py.attrs["petsc_iterations"]
    for ksp in (t for t in REFUSED if t in outcomes):
        assert outcomes[ksp].get("refused") == python_outcomes[ksp].get("refused")


@pytest.mark.parametrize("ksp", sorted(REFUSED))
def test_refused_with_the_reason(outcomes: dict[str, Any], ksp: str) -> None:
    _present(outcomes, ksp)
    if ksp == "hpddm" and "path" in outcomes[ksp]:
        pytest.skip("this PETSc build has HPDDM")
    message = outcomes[ksp].get("refused", "")
    assert REFUSED[ksp] in message
    assert "\n" not in message
    assert "-ksp_max_it" not in message  # never blame an option the user did not give


def test_pipecg_on_two_ranks(ksptrace_cli, tmp_path: Path) -> None:
    """The issue's case: 'ran 101 iterations, more than the 100 forced', without -ksp_max_it."""
    path = tmp_path / "pipecg.h5"
    proc = ksptrace_cli("run", "--n", "20000", "--ksp", "pipecg", "--iterations", "100",
                        "--np", "2", "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    assert trace.iterations == 100
    assert trace.iteration_seconds.shape == (2, 100)
    assert (trace.iteration_seconds > 0).all()
