"""A plain petsc4py program for ``ksptrace trace``'s wait tests (tests/harness/hook/test_waits.py):
GMRES (or ``-ksp_type``) on the 1-D Laplacian of ``-n`` rows for ``-its`` iterations, with a
preconditioner of its own (the identity) that on rank ``-late`` spins ``DETOUR`` seconds in every
tenth application. It knows nothing of ksptrace: it prints, for each rank, the
``MPI_Wtime`` span of each spin, the known truth the trace's waits are checked against
(gathered: rank 0 prints one line ``{"ranks": [...]}``).
"""

from __future__ import annotations

import json
import sys

import petsc4py

petsc4py.init(sys.argv)
from mpi4py import MPI  # noqa: E402
from petsc4py import PETSc  # noqa: E402

DETOUR = 1e-3


class LateIdentity:
    """y = x, with a spin of DETOUR seconds in every tenth call on one rank."""

    def __init__(self, late: bool) -> None:
        self.late, self.calls, self.spans = late, 0, []

    def apply(self, pc: object, x: PETSc.Vec, y: PETSc.Vec) -> None:
        x.copy(y)
        self.calls += 1
        if self.late and self.calls % 10 == 5:
            t0 = MPI.Wtime()
            while MPI.Wtime() - t0 < DETOUR:
                pass
            self.spans.append((t0, MPI.Wtime()))


def main() -> None:
    opts = PETSc.Options()
    n, its, late = opts.getInt("n", 20000), opts.getInt("its", 300), opts.getInt("late", 1)
    comm = PETSc.COMM_WORLD
    A = PETSc.Mat().createAIJ([n, n], nnz=3, comm=comm)
    lo, hi = A.getOwnershipRange()
    for i in range(lo, hi):
        A[i, i] = 2.0
        if i > 0:
            A[i, i - 1] = -1.0
        if i < n - 1:
            A[i, i + 1] = -1.0
    A.assemble()
    x, b = A.createVecs()
    b.set(1.0)
    ksp = PETSc.KSP().create(comm)
    ksp.setOperators(A)
    ksp.setType("gmres")
    ksp.setTolerances(rtol=1e-50, atol=0.0, max_it=its)
    context = LateIdentity(comm.getRank() == late)
    ksp.getPC().setType("python")
    ksp.getPC().setPythonContext(context)
    ksp.setFromOptions()
    ksp.solve(b, x)
    rows = comm.tompi4py().gather({"rank": comm.getRank(), "iterations":
                                   ksp.getIterationNumber(), "spans": context.spans}, root=0)
    if rows is not None:  # one line from rank 0: two ranks' lines may interleave
        print(json.dumps({"ranks": rows}), flush=True)


if __name__ == "__main__":
    main()
