"""Declaration of the laplace1d problem (PETSc KSP tutorial ex23)."""

from ksptrace.problems.info import ProblemInfo

INFO = ProblemInfo(
    name="laplace1d",
    help="1-D Laplacian tridiag(-1, 2, -1), b = A*1, x0 = 0 (PETSc KSP tutorial ex23)",
    module="ksptrace.problems.laplace1d",
)
