"""Declaration of the iceflow problem (PETSc SNES tutorial ex48, v3.18). Pure: no PETSc import.

Parameter names mirror ex48's options: ``hom`` is ``-thi_hom``; ``mx``, ``my``, ``mz`` are ``-M``,
``-N``, ``-P`` (map-plane points in x and y, points in the vertical); ``refine`` is ``-da_refine``;
``quadrature`` is ``-thi_quadrature``; ``alpha`` is ``-thi_alpha``; ``friction_m`` is
``-thi_friction_m``.
"""

from ksptrace.params import Param
from ksptrace.problems.info import ProblemInfo

PARAMS: tuple[Param, ...] = (
    Param("hom", str, "A", "ISMIP-HOM experiment: A (bumpy bed, no slip) or C (flat bed, sliding)",
          choices=("A", "C")),
    Param("mx", int, None, "map-plane points in x (ex48 -M); default: chosen from --n", minimum=3),
    Param("my", int, None, "map-plane points in y (ex48 -N); default: mx", minimum=3),
    Param("mz", int, None, "points in the vertical (ex48 -P); default: chosen from --n", minimum=2),
    Param("refine", int, 0, "uniform refinements of the grid (ex48 -da_refine)", minimum=0),
    Param("quadrature", str, "gauss", "3-D element quadrature (ex48 -thi_quadrature)",
          choices=("gauss", "lobatto")),
    Param("alpha", float, None, "bed angle in degrees (ex48 -thi_alpha); default 0.5 (A), 0.1 (C)"),
    Param("friction_m", float, 1.0, "sliding-law exponent, 1 = linear (ex48 -thi_friction_m)"),
)

INFO = ProblemInfo(
    name="iceflow",
    help="3-D Blatter-Pattyn hydrostatic ice flow, Glen's law n=3, Q1 elements, one Newton "
    "step (PETSc SNES tutorial ex48)",
    module="ksptrace.problems.iceflow",
    params=PARAMS,
    # at the default n, GMRES solves the Newton step to machine precision in about 630
    # iterations and then breaks down; 300 works for gmres, pgmres, bcgs and pipebcgs
    run_defaults={"iterations": 300},
)
