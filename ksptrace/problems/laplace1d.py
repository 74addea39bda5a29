"""The 1-D Laplacian of PETSc's KSP tutorial ex23, assembled without a loop over rows.

A = tridiag(-1, 2, -1) of global size n, distributed by PETSc's ownership ranges;
b = A * 1, so the exact solution is the ones vector; the initial guess is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from petsc4py import PETSc

from ksptrace.errors import UsageError
from ksptrace.problems.base import ProblemInstance


def local_csr(n: int, rstart: int, rend: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays (row pointers, global columns, values) of rows rstart..rend-1 of A."""
    rows = np.arange(rstart, rend, dtype=PETSc.IntType)
    has_left = rows > 0
    has_right = rows < n - 1
    counts = 1 + has_left.astype(PETSc.IntType) + has_right.astype(PETSc.IntType)
    indptr = np.zeros(rows.size + 1, dtype=PETSc.IntType)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    cols = np.empty(nnz, dtype=PETSc.IntType)
    vals = np.empty(nnz, dtype=PETSc.ScalarType)
    # Diagonal position within each row: after the left neighbour when there is one.
    diag_pos = indptr[:-1] + has_left
    cols[diag_pos] = rows
    vals[diag_pos] = 2.0
    left_pos = indptr[:-1][has_left]
    cols[left_pos] = rows[has_left] - 1
    vals[left_pos] = -1.0
    right_pos = diag_pos[has_right] + 1
    cols[right_pos] = rows[has_right] + 1
    vals[right_pos] = -1.0
    return indptr, cols, vals


class Laplace1D(ProblemInstance):
    solve_is_kspsolve = True
    def __init__(self, comm: PETSc.Comm, n: int) -> None:
        size = comm.getSize()
        if n < size:
            raise UsageError(f"n = {n} is smaller than the number of ranks ({size}); use n >= P")
        nlocal = PETSc.Sys.splitOwnership(n, comm=comm)[0]
        rstart = comm.tompi4py().exscan(nlocal) if size > 1 else 0
        rstart = rstart or 0
        indptr, cols, vals = local_csr(n, rstart, rstart + nlocal)
        self._A = PETSc.Mat().createAIJ(
            size=((nlocal, n), (nlocal, n)), csr=(indptr, cols, vals), comm=comm
        )
        self._A.assemble()
        self._x, self._b = self._A.createVecs()
        self._x.set(1.0)
        self._A.mult(self._x, self._b)
        self._x.set(0.0)
        self._ksp = PETSc.KSP().create(comm=comm)
        self._ksp.setOperators(self._A)
        self._ksp.getPC().setType(PETSc.PC.Type.JACOBI)
        self.n_global = n
        self.nnz = int(self._A.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"])

    @property
    def rhs(self) -> PETSc.Vec:
        return self._b

    @property
    def solution(self) -> PETSc.Vec:
        return self._x

    @property
    def ksp(self) -> PETSc.KSP:
        return self._ksp

    def set_from_options(self) -> None:
        self._ksp.setFromOptions()

    def prepare(self) -> None:
        self._ksp.setUp()

    def solve(self) -> None:
        self._ksp.solve(self._b, self._x)

    def reset(self) -> None:
        self._x.set(0.0)

    def solution_error(self) -> float:
        err = self._x.duplicate()
        err.set(1.0)
        err.axpy(-1.0, self._x)
        return float(err.norm(PETSc.NormType.INFINITY))

    def destroy(self) -> None:
        for obj in (self._ksp, self._A, self._x, self._b):
            obj.destroy()


def build(comm: PETSc.Comm, n: int, options: Mapping[str, Any]) -> Laplace1D:
    return Laplace1D(comm, n)
