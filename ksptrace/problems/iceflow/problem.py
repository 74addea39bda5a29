"""The ice-flow ProblemInstance: one Newton step of ex48 whose linear solve is the timed KSP."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from petsc4py import PETSc

from ksptrace.params import resolve
from ksptrace.problems.base import ProblemInstance
from ksptrace.problems.iceflow.assembly import Assembler, create_dmda
from ksptrace.problems.iceflow.elements import Physics
from ksptrace.problems.iceflow.geometry import Domain, make_domain
from ksptrace.problems.iceflow.grid import Grid, check_ranks, choose_grid
from ksptrace.problems.iceflow.params import PARAMS
from ksptrace.problems.iceflow.physics import Rheology, Sliding
from ksptrace.problems.iceflow.quadrature import hex_rule
from ksptrace.trace.model import AttrValue

NO_LIMIT = 2**30


def _reason_name(enum: Any, value: int) -> str:
    for name, val in vars(enum).items():
        if not name.startswith("_") and name != "ITERATING" and val == value:
            return str(name)
    return str(value)


class IceFlow(ProblemInstance):
    """ex48 on one grid: SNES (newtonls) limited to one Newton step, zero initial guess.

    A forced-K linear solve ends with KSP_DIVERGED_ITS; SNES is told to accept any number of
    failed linear solves so that the step (and its line search) still completes.
    """

    def __init__(
        self,
        comm: PETSc.Comm,
        grid: Grid,
        coarse: Grid,
        domain: Domain,
        settings: Mapping[str, Any],
    ) -> None:
        split = check_ranks(grid, comm.getSize())
        self.grid, self.coarse, self.domain = grid, coarse, domain
        self.settings = dict(settings)
        units = domain.units
        self.physics = Physics(
            hx=domain.lx / grid.mx, hy=domain.ly / grid.my, nz=grid.mz,
            rule=hex_rule(settings["quadrature"]), rheology=Rheology.glen(units),
            sliding=Sliding.power_law(units, m=settings["friction_m"]), rhog=units.rhog,
            sin_alpha=math.sin(domain.alpha), no_slip=domain.case.no_slip,
        )
        self.da = create_dmda(comm, grid, split)
        self.assembler = Assembler(self.da, domain, grid, self.physics)
        self.J = self.assembler.create_matrix()
        self.x = self.da.createGlobalVec()
        self.f = self.x.duplicate()
        self.snes = PETSc.SNES().create(comm=comm)
        self.snes.setFunction(self._residual, self.f)
        self.snes.setJacobian(self._jacobian, self.J)
        self.snes.setTolerances(max_it=1)
        self.snes.setMaxKSPFailures(NO_LIMIT)
        self.snes.setConvergenceHistory(length=16, reset=True)
        self.n_global = grid.unknowns
        self.nnz = int(self.J.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"])
        self._result: dict[str, AttrValue] = {}

    def _residual(self, snes: PETSc.SNES, x: PETSc.Vec, f: PETSc.Vec) -> None:
        self.assembler.residual(x, f)

    def _jacobian(self, snes: PETSc.SNES, x: PETSc.Vec, J: PETSc.Mat, P: PETSc.Mat) -> None:
        self.assembler.jacobian(x, P)

    @property
    def ksp(self) -> PETSc.KSP:
        return self.snes.getKSP()

    def set_from_options(self) -> None:
        self.snes.setFromOptions()

    def solve(self) -> None:
        self.snes.solve(None, self.x)
        norms, _ = self.snes.getConvergenceHistory()
        self._result = {
            "snes_reason": _reason_name(PETSc.SNES.ConvergedReason, self.snes.getConvergedReason()),
            "ksp_reason": _reason_name(PETSc.KSP.ConvergedReason, self.ksp.getConvergedReason()),
            "snes_iterations": int(self.snes.getIterationNumber()),
            "snes_norm0": float(norms[0]) if len(norms) else float("nan"),
            "snes_norm1": float(self.snes.getFunctionNorm()),
        }

    def reset(self) -> None:
        self.x.set(0.0)
        self.snes.setConvergenceHistory(length=16, reset=True)

    def attrs(self) -> dict[str, AttrValue]:
        s = self.settings
        out: dict[str, AttrValue] = {
            "hom": self.domain.case.name,
            "mx": self.grid.mx, "my": self.grid.my, "mz": self.grid.mz,
            "coarse_mx": self.coarse.mx, "coarse_my": self.coarse.my, "coarse_mz": self.coarse.mz,
            "refine": int(s["refine"]),
            "quadrature": str(s["quadrature"]),
            "alpha": float(self.domain.alpha * 180 / math.pi),
            "friction_m": float(s["friction_m"]),
            "mat_type": "aij",
        }
        out.update(self._result)
        return out

    def destroy(self) -> None:
        for obj in (self.snes, self.J, self.x, self.f, self.da):
            obj.destroy()


def build(comm: PETSc.Comm, n: int, options: Mapping[str, Any]) -> IceFlow:
    known = {p.name for p in PARAMS}
    settings = resolve(PARAMS, {k: v for k, v in options.items() if k in known})
    domain = make_domain(settings["hom"], settings["alpha"])
    s = settings
    coarse, grid = choose_grid(n, s["mx"], s["my"], s["mz"], s["refine"])
    return IceFlow(comm, grid, coarse, domain, settings)
