"""The ice-flow problem under mpiexec -n 1 and -n 2: the same operator as PETSc's ex48 (figures
measured with the C tutorial, v3.18.5, built against Debian's PETSc 3.18), and the assembled
Newton Jacobian against finite differences of the residual at a non-zero velocity state."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi

HELPER = Path(__file__).with_name("iceflow_check.py")

# ex48 run as: mpiexec -n {1,2} ex48 <ex48_args> -snes_max_it 1 -snes_monitor -ksp_monitor
#   -ksp_type gmres -pc_type jacobi -ksp_max_it 6 -ksp_rtol 0 -ksp_atol 0 -ksp_converged_maxits
#   -ksp_view ::ascii_info
# ex48 prints norms with 13 significant digits, hence rtol 1e-10 below is far from rounding.
EX48_FIGURES: dict[str, dict[str, Any]] = {
    "A-6x6x4": {
        "ex48_args": "-M 6 -P 4",
        "options": {"mx": 6, "mz": 4},
        "unknowns": 288, "nnz": 12960,
        "np1": {
            "snes_norm0": 73.80893035527, "snes_norm1": 64.02901393143,
            "ksp_norms": [
                0.0009368871463669, 0.0007365134100845, 0.0004975728879046,
                0.0001242073754201, 7.933506943079e-05, 4.158593600825e-05,
                1.381671450184e-05,
            ],
        },
        "np2": {
            "snes_norm0": 73.80893035527, "snes_norm1": 64.02901393143,
            "ksp_norms": [
                0.0009368871463669, 0.0007365134100845, 0.0004975728879046,
                0.0001242073754201, 7.933506943079e-05, 4.158593600825e-05,
                1.381671450184e-05,
            ],
        },
    },
    "A-10x8x5": {
        "ex48_args": "-M 10 -N 8 -P 5",
        "options": {"mx": 10, "my": 8, "mz": 5},
        "unknowns": 800, "nnz": 37440,
        "np1": {
            "snes_norm0": 44.94251809225, "snes_norm1": 38.82023382374,
            "ksp_norms": [
                0.000848440573899, 0.0007170821293106, 0.0005647749076507,
                0.0003984539619344, 0.0001432615457842, 9.83875025358e-05,
                6.560346096242e-05,
            ],
        },
        "np2": {
            "snes_norm0": 44.94251809225, "snes_norm1": 38.82023382374,
            "ksp_norms": [
                0.000848440573899, 0.0007170821293106, 0.0005647749076507,
                0.0003984539619344, 0.0001432615457842, 9.83875025358e-05,
                6.560346096242e-05,
            ],
        },
    },
    "C-8x8x5": {
        "ex48_args": "-M 8 -P 5 -thi_hom C",
        "options": {"mx": 8, "mz": 5, "hom": "C"},
        "unknowns": 640, "nnz": 29952,
        "np1": {
            "snes_norm0": 10.2037824572, "snes_norm1": 7.748933168483,
            "ksp_norms": [
                0.0001769591035707, 0.0001488185783622, 0.0001296186488577,
                9.630311798462e-05, 5.399274735525e-05, 4.929819203698e-05,
                4.553631223331e-05,
            ],
        },
        "np2": {
            "snes_norm0": 10.2037824572, "snes_norm1": 7.748933168483,
            "ksp_norms": [
                0.0001769591035707, 0.0001488185783622, 0.0001296186488577,
                9.630311798462e-05, 5.399274735524e-05, 4.929819203698e-05,
                4.553631223331e-05,
            ],
        },
    },
    "A-lobatto-6x6x4": {
        "ex48_args": "-M 6 -P 4 -thi_quadrature lobatto",
        "options": {"mx": 6, "mz": 4, "quadrature": "lobatto"},
        "unknowns": 288, "nnz": 12960,
        "np1": {
            "snes_norm0": 74.95922417812, "snes_norm1": 64.65719001976,
            "ksp_norms": [
                0.0004701996587731, 0.0003565912459823, 0.000234142883178,
                8.11617916941e-05, 5.482454175876e-05, 1.949502678988e-05,
                1.140525704683e-05,
            ],
        },
        "np2": {
            "snes_norm0": 74.95922417812, "snes_norm1": 64.65719001976,
            "ksp_norms": [
                0.0004701996587731, 0.0003565912459823, 0.000234142883178,
                8.11617916941e-05, 5.482454175876e-05, 1.949502678988e-05,
                1.140525704683e-05,
            ],
        },
    },
    "A-refine1-4x4x3": {
        "ex48_args": "-M 4 -P 3 -da_refine 1 -thi_mat_type aij",
        "options": {"mx": 4, "mz": 3, "refine": 1},
        "unknowns": 640, "nnz": 29952,
        "np1": {
            "snes_norm0": 50.17075368888, "snes_norm1": 43.34990842351,
            "ksp_norms": [
                0.0008236909742025, 0.0006945828106108, 0.0005435293996167,
                0.0003788830830449, 0.0001293412051675, 9.740687187863e-05,
                5.8254048497e-05,
            ],
        },
        "np2": {
            "snes_norm0": 50.17075368888, "snes_norm1": 43.34990842351,
            "ksp_norms": [
                0.0008236909742025, 0.0006945828106108, 0.0005435293996167,
                0.0003788830830449, 0.0001293412051675, 9.740687187863e-05,
                5.8254048497e-05,
            ],
        },
    },
    "C-6x12x4-ysplit": {
        "ex48_args": "-M 6 -N 12 -P 4 -thi_hom C",
        "options": {"mx": 6, "my": 12, "mz": 4, "hom": "C"},
        "unknowns": 576, "nnz": 25920,
        "np1": {
            "snes_norm0": 10.84075797002, "snes_norm1": 7.941630471495,
            "ksp_norms": [
                0.0002712985834355, 0.0002075160903006, 0.0001753075402005,
                7.853477654351e-05, 7.147533613727e-05, 4.15195272504e-05,
                3.633927978448e-05,
            ],
        },
        "np2": {
            "snes_norm0": 10.84075797002, "snes_norm1": 7.941630471495,
            "ksp_norms": [
                0.0002712985834355, 0.0002075160903006, 0.0001753075402005,
                7.853477654351e-05, 7.147533613727e-05, 4.15195272504e-05,
                3.633927978449e-05,
            ],
        },
    },
    "C-m0.5-8x6x4": {
        "ex48_args": "-M 8 -N 6 -P 4 -thi_hom C -thi_friction_m 0.5",
        "options": {"mx": 8, "my": 6, "mz": 4, "hom": "C", "friction_m": 0.5},
        "unknowns": 384, "nnz": 17280,
        "np1": {
            "snes_norm0": 13.27716272578, "snes_norm1": 11.00851722727,
            "ksp_norms": [
                0.0002203500296736, 0.0001681717531543, 0.0001417265339904,
                6.134103106521e-05, 5.656357319803e-05, 3.944812682868e-05,
                2.956708476051e-05,
            ],
        },
        "np2": {
            "snes_norm0": 13.27716272578, "snes_norm1": 11.00851722727,
            "ksp_norms": [
                0.0002203500296736, 0.0001681717531543, 0.0001417265339904,
                6.134103106521e-05, 5.656357319803e-05, 3.944812682868e-05,
                2.956708476052e-05,
            ],
        },
    },
}


def run_helper(
    nprocs: int, mode: str, arg: Any, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    cmd = ["mpiexec", "-n", str(nprocs), sys.executable, str(HELPER), mode, json.dumps(arg)]
    return subprocess.run(
        cmd, env=solver_env(), capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        check=False,
    )


def helper_json(nprocs: int, mode: str, arg: Any) -> list[dict[str, Any]]:
    proc = run_helper(nprocs, mode, arg)
    assert proc.returncode == 0, proc.stderr
    result: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module", params=[1, 2], ids=["np1", "np2"])
def measured(request: pytest.FixtureRequest, require_petsc: None) -> tuple[int, dict[str, Any]]:
    nprocs = request.param
    cases = list(EX48_FIGURES)
    results = helper_json(nprocs, "figures", [EX48_FIGURES[c]["options"] for c in cases])
    return nprocs, dict(zip(cases, results, strict=True))


@pytest.mark.parametrize("case", list(EX48_FIGURES))
def test_same_operator_as_ex48(measured: tuple[int, dict[str, Any]], case: str) -> None:
    nprocs, results = measured
    mine, ref = results[case], EX48_FIGURES[case]
    assert mine["unknowns"] == ref["unknowns"]
    assert mine["nnz"] == ref["nnz"]
    ref_np = ref[f"np{nprocs}"]
    np.testing.assert_allclose(mine["snes_norm0"], ref_np["snes_norm0"], rtol=1e-10)
    np.testing.assert_allclose(mine["ksp_norms"], ref_np["ksp_norms"], rtol=1e-10)
    np.testing.assert_allclose(mine["snes_norm1"], ref_np["snes_norm1"], rtol=1e-10)
    # The forced linear solve fails by iterations, and SNES still completes its one step.
    assert mine["ksp_reason"] == "DIVERGED_MAX_IT"
    assert mine["snes_reason"] == "DIVERGED_MAX_IT"


FD_CASES = [
    {"mx": 4, "my": 5, "mz": 3},
    {"mx": 4, "my": 5, "mz": 3, "quadrature": "lobatto"},
    {"mx": 5, "my": 4, "mz": 3, "hom": "C", "friction_m": 0.5},
]


@pytest.mark.parametrize("nprocs", [1, 2])
def test_jacobian_matches_finite_differences(require_petsc: None, nprocs: int) -> None:
    results = helper_json(nprocs, "fd", FD_CASES)
    for options, res in zip(FD_CASES, results, strict=True):
        assert res["rel_error"] < 1e-6, (options, res)
        assert res["max_abs"] > 0


@pytest.mark.parametrize(
    ("nprocs", "options", "message"),
    [
        (2, {"hom": "B"}, "valid values: A, C"),
        (2, {"mx": 6, "mz": 1}, "must be >= 2"),
        (5, {"mx": 3, "my": 3, "mz": 2}, "too small for 5 ranks"),
    ],
)
def test_bad_input_fails_on_every_rank(
    require_petsc: None, nprocs: int, options: dict[str, Any], message: str
) -> None:
    proc = run_helper(nprocs, "build", options, timeout=60)
    assert proc.returncode != 0
    lines = [line for line in proc.stdout.splitlines() if message in line]
    assert sorted(line.split(":")[0] for line in lines) == [f"rank {r}" for r in range(nprocs)]
