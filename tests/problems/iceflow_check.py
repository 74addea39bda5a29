"""MPI helper for the ice-flow tests: run under mpiexec; rank 0 prints one JSON line.

    iceflow_check.py figures '<list of option dicts as JSON>'  unknowns, nonzeros, SNES, KSP norms
    iceflow_check.py fd '<list of option dicts as JSON>'       Jacobian vs finite differences
    iceflow_check.py build '<option dict as JSON>'             build only (bad-input checks)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import petsc4py

petsc4py.init([sys.argv[0]])
import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402
from petsc4py import PETSc  # noqa: E402

from ksptrace.errors import UsageError  # noqa: E402
from ksptrace.problems.iceflow.problem import IceFlow, build  # noqa: E402

KSP_STEPS = 6


def figures(inst: IceFlow) -> dict[str, Any]:
    """ex48's figures for a one-step solve with GMRES + Jacobi and KSP_STEPS forced iterations."""
    ksp = inst.ksp
    ksp.setType("gmres")
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=0.0, atol=0.0, max_it=KSP_STEPS)
    norms: list[float] = []
    ksp.setMonitor(lambda _ksp, _its, rnorm: norms.append(float(rnorm)))
    inst.set_from_options()
    inst.solve()
    attrs = inst.attrs()
    return {
        "unknowns": inst.n_global, "nnz": inst.nnz, "ksp_norms": norms,
        "snes_norm0": attrs["snes_norm0"], "snes_norm1": attrs["snes_norm1"],
        "snes_reason": attrs["snes_reason"], "ksp_reason": attrs["ksp_reason"],
    }


def velocity_state(inst: IceFlow, no_slip: bool) -> PETSc.Vec:
    """A smooth, non-zero velocity field with a random part (zero on a no-slip bed)."""
    rng = np.random.default_rng(7 + PETSc.COMM_WORLD.getRank())
    patch = inst.assembler.patch
    x = inst.x.duplicate()
    shape = (*patch.owned_shape, 2)
    level = np.linspace(0.0, 1.0, patch.nz)[None, None, :]
    vel = np.empty(shape)
    vel[..., 0] = 0.05 * (0.5 + level) + 0.02 * rng.standard_normal(shape[:3])
    vel[..., 1] = 0.01 * (0.5 - level) + 0.02 * rng.standard_normal(shape[:3])
    if no_slip:
        vel[:, :, 0] = 0.0  # ex48 keeps only the diagonal of the bed rows: exact only there
    x.getArray()[:] = vel.reshape(-1)
    return x


def fd_check(inst: IceFlow, step: float = 1e-7) -> dict[str, Any]:
    comm = PETSc.COMM_WORLD
    x0 = velocity_state(inst, inst.domain.case.no_slip)
    jac = inst.J
    inst.assembler.jacobian(x0, jac)
    rstart, rend = jac.getOwnershipRange()
    n = jac.getSize()[0]
    dense = jac.getValues(np.arange(rstart, rend, dtype=PETSc.IntType),
                          np.arange(n, dtype=PETSc.IntType))
    fd = np.empty_like(dense)
    xp, fp, fm = x0.duplicate(), x0.duplicate(), x0.duplicate()
    for col in range(n):
        for sign, f in ((1.0, fp), (-1.0, fm)):
            x0.copy(xp)
            if rstart <= col < rend:
                xp.setValue(col, sign * step, addv=PETSc.InsertMode.ADD_VALUES)
            xp.assemble()
            inst.assembler.residual(xp, f)
        fd[:, col] = (fp.getArray() - fm.getArray()) / (2 * step)
    mpi = comm.tompi4py()
    diff2 = mpi.allreduce(float(np.sum((dense - fd) ** 2)))
    norm2 = mpi.allreduce(float(np.sum(dense**2)))
    return {"rel_error": (diff2 / norm2) ** 0.5, "unknowns": n,
            "max_abs": mpi.allreduce(float(np.abs(dense).max()), op=MPI.MAX)}


def main() -> int:
    mode, arg = sys.argv[1], json.loads(sys.argv[2])
    rank = PETSc.COMM_WORLD.getRank()
    if mode == "build":
        try:
            build(PETSc.COMM_WORLD, int(arg.pop("n", 0)), arg).destroy()
        except UsageError as err:
            # Every rank must get here (the failure is collective); rank 0 reports them all.
            messages = PETSc.COMM_WORLD.tompi4py().gather(str(err), root=0)
            for r, msg in enumerate(messages or []):
                print(f"rank {r}: {msg}", flush=True)
            return 2
        return 0
    results = []
    for options in arg:
        inst = build(PETSc.COMM_WORLD, int(options.pop("n", 0)), options)
        results.append(figures(inst) if mode == "figures" else fd_check(inst))
        inst.destroy()
    if rank == 0:
        print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
