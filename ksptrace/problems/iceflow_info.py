"""Declaration of the iceflow problem (PETSc SNES tutorial ex48, v3.18). Pure: no PETSc import.
Its parameters are in :mod:`ksptrace.problems.iceflow.params`."""

from collections.abc import Mapping
from typing import Any

from ksptrace.problems.iceflow.grid import choose_grid
from ksptrace.problems.iceflow.params import PARAMS
from ksptrace.problems.info import ProblemInfo


def unknowns(n: int, options: Mapping[str, Any]) -> int:
    """The fine grid's unknowns for ``--n n`` and the grid flags in ``options`` (which, when
    given, decide the grid whatever n says)."""
    fine = choose_grid(n, options.get("mx"), options.get("my"), options.get("mz"),
                       options.get("refine") or 0)[1]
    return fine.unknowns


INFO = ProblemInfo(
    name="iceflow",
    help="3-D Blatter-Pattyn hydrostatic ice flow, Glen's law n=3, Q1 elements, one Newton "
    "step (PETSc SNES tutorial ex48)",
    module="ksptrace.problems.iceflow.problem",
    params=PARAMS,
    # at the default n, GMRES solves the Newton step to machine precision in about 630
    # iterations and then breaks down; 300 works for gmres, pgmres, bcgs and pipebcgs
    run_defaults={"iterations": 300},
    unknowns=unknowns,
)
