"""The iceflow problem's own parameters. Pure: no PETSc import.

Parameter names mirror ex48's options: ``hom`` is ``-thi_hom``; ``mx``, ``my``, ``mz`` are ``-M``,
``-N``, ``-P`` (map-plane points in x and y, points in the vertical); ``refine`` is ``-da_refine``;
``quadrature`` is ``-thi_quadrature``; ``alpha`` is ``-thi_alpha``; ``friction_m`` is
``-thi_friction_m``.
"""

from ksptrace.params import Param

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
