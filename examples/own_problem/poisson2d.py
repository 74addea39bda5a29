"""2-D Poisson on a DMDA: -(u_xx + u_yy) = f on the unit square, u = 0 on its boundary.

Five-point finite differences on an nx x ny grid, a right-hand side chosen by ``set_rhs``, zero
initial guess. Run it as a ksptrace problem (``--problem poisson2d:build``, with this folder on
PYTHONPATH) or record it in your own loop (``timeloop.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ksptrace.params import Param
from ksptrace.problems.base import ProblemInstance

PARAMS = (
    Param("nx", int, None, "grid points in x; default: the square root of --n", minimum=3),
    Param("ny", int, None, "grid points in y; default: nx", minimum=3),
)


class Poisson2D(ProblemInstance):
    def __init__(self, da: Any, A: Any, ksp: Any) -> None:
        self.da, self.A, self._ksp = da, A, ksp
        self.b, self.x = da.createGlobalVec(), da.createGlobalVec()
        self.n_global = A.getSize()[0]
        self.nnz = int(A.getInfo(A.InfoType.GLOBAL_SUM)["nz_used"])
        self.set_rhs(1)

    @property
    def ksp(self) -> Any:
        return self._ksp

    def set_rhs(self, mode: int) -> None:
        """f = sin(mode pi x) sin(pi y) + 1 inside, 0 on the boundary."""
        (xs, xe), (ys, ye) = self.da.getRanges()
        nx, ny = self.da.getSizes()
        i, j = np.meshgrid(np.arange(xs, xe), np.arange(ys, ye), indexing="ij")
        f = np.sin(mode * math.pi * i / (nx - 1)) * np.sin(math.pi * j / (ny - 1)) + 1.0
        f[(i == 0) | (i == nx - 1) | (j == 0) | (j == ny - 1)] = 0.0
        self.da.getVecArray(self.b)[:, :] = f

    def set_from_options(self) -> None:
        self._ksp.setFromOptions()

    def prepare(self) -> None:
        self._ksp.setUp()

    def solve(self) -> None:
        self._ksp.solve(self.b, self.x)

    def reset(self) -> None:
        self.x.set(0.0)


def build(comm: Any, n: int, options: Mapping[str, Any]) -> Poisson2D:
    """2-D Poisson, five-point stencil on a DMDA (example of a user-defined problem)."""
    from petsc4py import PETSc  # inside: ksptrace starts PETSc with its options first

    nx = options.get("nx") or max(3, round(math.sqrt(n)))
    ny = options.get("ny") or nx
    da = PETSc.DMDA().create([nx, ny], stencil_width=1, stencil_type=PETSc.DMDA.StencilType.STAR,
                             comm=comm)
    A = da.createMat()
    hx2, hy2 = (nx - 1) ** 2, (ny - 1) ** 2  # 1/h^2
    row, col = PETSc.Mat.Stencil(), PETSc.Mat.Stencil()
    (xs, xe), (ys, ye) = da.getRanges()
    for j in range(ys, ye):
        for i in range(xs, xe):
            row.index = (i, j)
            if i in (0, nx - 1) or j in (0, ny - 1):
                A.setValueStencil(row, row, 1.0)
                continue
            for di, dj, v in ((0, 0, 2 * (hx2 + hy2)), (-1, 0, -hx2), (1, 0, -hx2),
                              (0, -1, -hy2), (0, 1, -hy2)):
                col.index = (i + di, j + dj)
                A.setValueStencil(row, col, v)
    A.assemble()
    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(A)
    return Poisson2D(da, A, ksp)
