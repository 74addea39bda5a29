"""A time loop whose every KSPSolve ksptrace records: the 2-D Poisson problem of poisson2d.py,
solved to a tolerance for a right-hand side that changes at each step.

    mpiexec -n 2 python examples/own_problem/timeloop.py traces/timeloop.h5 -ksp_type cg
    ksptrace analyze traces/timeloop.h5 --out report/
"""

import sys

import petsc4py

petsc4py.init(sys.argv)
from mpi4py import MPI  # noqa: E402
from petsc4py import PETSc  # noqa: E402
from poisson2d import build  # noqa: E402

import ksptrace  # noqa: E402

comm = MPI.COMM_WORLD
REASONS = {code: name for name, code in vars(PETSc.KSP.ConvergedReason).items()
           if name.isupper() and name != "CONVERGED_ITERATING"}  # 2 -> CONVERGED_RTOL
problem = build(PETSc.COMM_WORLD, 64 * 64, {"nx": 64})
ksp = problem.ksp
ksp.setTolerances(rtol=1e-8)
ksp.setFromOptions()  # the command line wins: -ksp_type cg -pc_type jacobi ...

with ksptrace.record(ksp, sys.argv[1], comm=comm, name="poisson2d-timeloop", overwrite=True):
    for step in range(5):
        problem.set_rhs(step + 1)  # a new right-hand side: a new number of iterations
        problem.x.set(0.0)
        ksp.solve(problem.b, problem.x)
        if comm.rank == 0:
            print(f"step {step}: {ksp.getIterationNumber()} iterations, "
                  f"{REASONS.get(ksp.getConvergedReason(), ksp.getConvergedReason())}")
