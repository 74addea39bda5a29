"""laplace1d is PETSc's ex23 operator: its structure, and residuals pinned to the C tutorial."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace.read import read_trace

# Residual norms printed by PETSc 3.18.5's C tutorial ex23 (built against Debian's PETSc in a
# temporary folder: `ex23 -n 100000 -ksp_type T -ksp_rtol 0 -ksp_atol 0 -ksp_divtol 1e300
# -ksp_max_it 200 -ksp_monitor`, 1 rank, Jacobi). Printed with 13 significant digits, hence the
# 1e-11 relative tolerance.
EX23_C_RESIDUALS = {
    "gmres": {0: 7.071067811865e-01, 1: 3.162277660168e-01, 10: 3.143473067310e-02,
              50: 3.526345228832e-03, 100: 1.457389326204e-03, 150: 9.507898809088e-04,
              200: 7.199252719613e-04},
    "bcgs": {0: 7.071067811865e-01, 1: 2.041241452319e-01, 10: 1.952912681826e-02,
             50: 2.227906544879e-03, 100: 7.666157189551e-04, 150: 3.664139152656e-04,
             200: 2.601735770556e-04},
}


@pytest.mark.mpi
@pytest.mark.parametrize("ksp", sorted(EX23_C_RESIDUALS))
def test_residuals_match_petsc_ex23(ksptrace_cli, tmp_path: Path, ksp: str) -> None:
    path = tmp_path / f"{ksp}.h5"
    proc = ksptrace_cli("run", "--n", "100000", "--ksp", ksp, "--iterations", "200",
                        "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    norms = read_trace(path).residual_norms
    expected = EX23_C_RESIDUALS[ksp]
    got = np.array([norms[k] for k in expected])
    np.testing.assert_allclose(got, list(expected.values()), rtol=1e-11)


def test_local_rows_are_tridiag(require_petsc: None) -> None:
    from ksptrace.harness.petsc.petscenv import locate_petsc4py

    locate_petsc4py()
    from ksptrace.problems.laplace1d import local_csr

    n = 7
    dense = np.zeros((n, n))
    for lo, hi in ((0, 3), (3, 5), (5, 7)):  # three "ranks"
        indptr, cols, vals = local_csr(n, lo, hi)
        for r in range(hi - lo):
            dense[lo + r, cols[indptr[r]:indptr[r + 1]]] = vals[indptr[r]:indptr[r + 1]]
    expected = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    np.testing.assert_array_equal(dense, expected)
    indptr, cols, _ = local_csr(n, 0, n)
    for r in range(n):
        assert np.all(np.diff(cols[indptr[r]:indptr[r + 1]]) > 0)
