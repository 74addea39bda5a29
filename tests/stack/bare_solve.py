"""A bare petsc4py solve of PETSc's ex23 (the reference for ksptrace's residual histories).

Written as a PETSc user would, with nothing from ksptrace: A = tridiag(-1, 2, -1) assembled row
by row with setValues, b = A * ones, x = 0, Jacobi, K forced iterations (rtol = atol = 0,
divergence out of reach), the residual history kept by KSPSetConvergenceHistory.

    mpiexec -n P python tests/stack/bare_solve.py N K KSP [KSP ...]

Rank 0 prints one JSON object: {"petsc": "3.x.y", "histories": {ksp: [norms]}} with the norms
as float.hex strings, so that "equal" means bit for bit.
"""

import json
import sys

import petsc4py

petsc4py.init([])
from petsc4py import PETSc  # noqa: E402


def solve(n: int, iterations: int, ksp_type: str) -> list[float]:
    comm = PETSc.COMM_WORLD
    A = PETSc.Mat().createAIJ(size=(n, n), nnz=3, comm=comm)
    rstart, rend = A.getOwnershipRange()
    for i in range(rstart, rend):
        if i > 0:
            A.setValue(i, i - 1, -1.0)
        A.setValue(i, i, 2.0)
        if i < n - 1:
            A.setValue(i, i + 1, -1.0)
    A.assemble()
    x, b = A.createVecs()
    x.set(1.0)
    A.mult(x, b)
    x.set(0.0)
    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(A)
    ksp.setType(ksp_type)
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=iterations)
    ksp.setConvergenceHistory(length=iterations + 1)
    ksp.solve(b, x)
    history = [float(v) for v in ksp.getConvergenceHistory()]
    for obj in (ksp, A, x, b):
        obj.destroy()
    return history


def main() -> None:
    n, iterations = int(sys.argv[1]), int(sys.argv[2])
    out = {ksp: [v.hex() for v in solve(n, iterations, ksp)] for ksp in sys.argv[3:]}
    if PETSc.COMM_WORLD.getRank() == 0:
        version = ".".join(str(v) for v in PETSc.Sys.getVersion())
        print(json.dumps({"petsc": version, "histories": out}))


if __name__ == "__main__":
    main()
