"""Run under mpiexec by tests/harness/test_record.py: ``ksptrace.record`` around a 5-step loop
of a KSP, a SNES and a TS, an exception inside the block, and the bad calls.

Argument: an empty folder for the traces. Prints one JSON line per case from rank 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ksptrace.harness.petsc.petscenv import init_petsc

PETSc = init_petsc([])

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import ksptrace  # noqa: E402
from ksptrace.errors import KsptraceError  # noqa: E402
from ksptrace.harness.petsc.petsc_compat import python_cause  # noqa: E402
from ksptrace.problems import registry  # noqa: E402

COMM = MPI.COMM_WORLD
OUT = Path(sys.argv[1])
N = 400


def emit(**row: Any) -> None:
    if COMM.rank == 0:
        print(json.dumps(row), flush=True)


def laplacian() -> Any:
    inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, N, {})
    inst.ksp.setType("cg")
    inst.ksp.setTolerances(rtol=1e-6)
    return inst


def loop() -> None:
    inst = laplacian()
    its = []
    with ksptrace.record(inst.ksp, OUT / "loop.h5", comm=COMM) as rec:
        for step in range(5):
            # b holds step + 1 eigenvectors of A: CG converges in step + 1 iterations
            start, end = inst.rhs.getOwnershipRange()
            i = np.arange(start, end) + 1
            inst.rhs.array = sum(np.sin(k * np.pi * i / (N + 1)) for k in range(1, step + 2))
            inst.reset()
            inst.solve()
            its.append(inst.ksp.getIterationNumber())
        inside = rec.solves
    emit(case="loop", its=its, inside=inside, after=rec.solves)


def raising() -> None:
    inst = laplacian()
    try:
        with ksptrace.record(inst.ksp, OUT / "raised.h5", comm=COMM):
            inst.solve()
            raise ValueError("boom")
    except ValueError as exc:
        emit(case="raised", error=str(exc), monitors=len(inst.ksp.getMonitor() or []))


def raising_on_one_rank() -> None:
    inst = laplacian()
    try:
        with ksptrace.record(inst.ksp, OUT / "one.h5", comm=COMM):
            inst.solve()
            if COMM.rank == COMM.size - 1:
                raise ValueError("boom on the last rank")
    except (ValueError, KsptraceError) as exc:
        emit(case="one-rank", error=f"{type(exc).__name__}: {exc}")


def no_comm() -> None:
    inst = laplacian()
    try:
        with ksptrace.record(inst.ksp, OUT / "nocomm.h5"):
            inst.solve()
        emit(case="no-comm", error=None)
    except KsptraceError as exc:
        emit(case="no-comm", error=f"{type(exc).__name__}: {exc}")


def newton() -> None:
    inst = laplacian()
    A = inst.ksp.getOperators()[0]
    b, x = inst.rhs, inst.solution
    J = A.duplicate(copy=True)

    def residual(snes: Any, u: Any, f: Any) -> None:
        A.mult(u, f)
        f.array += u.array_r ** 3
        f.axpy(-1.0, b)

    def jacobian(snes: Any, u: Any, jac: Any, pre: Any) -> None:
        A.copy(pre, structure=PETSc.Mat.Structure.SAME_NONZERO_PATTERN)
        d = u.duplicate()
        d.array = 3.0 * u.array_r ** 2
        pre.setDiagonal(d, addv=PETSc.InsertMode.ADD_VALUES)

    snes = PETSc.SNES().create(comm=PETSc.COMM_WORLD)
    snes.setFunction(residual, b.duplicate())
    snes.setJacobian(jacobian, J)
    snes.getKSP().setType("cg")
    snes.getKSP().getPC().setType("jacobi")
    snes.getKSP().setTolerances(rtol=1e-6)
    snes.setTolerances(rtol=1e-10)
    x.set(0.0)
    with ksptrace.record(snes, OUT / "snes.h5", comm=COMM):
        snes.solve(None, x)
    emit(case="snes", newton=snes.getIterationNumber(), linear=snes.getLinearSolveIterations(),
         reason=snes.getConvergedReason())


def timestepping() -> None:
    inst = laplacian()
    A = inst.ksp.getOperators()[0]
    J = A.duplicate(copy=True)
    J.scale(-1.0)

    def rhs(ts: Any, t: float, u: Any, f: Any) -> None:
        J.mult(u, f)

    def rhs_jacobian(ts: Any, t: float, u: Any, jac: Any, pre: Any) -> None:
        pass  # constant: J

    ts = PETSc.TS().create(comm=PETSc.COMM_WORLD)
    ts.setType(PETSc.TS.Type.BEULER)
    ts.setProblemType(PETSc.TS.ProblemType.LINEAR)
    ts.setRHSFunction(rhs, inst.rhs.duplicate())
    ts.setRHSJacobian(rhs_jacobian, J)
    ts.setTimeStep(0.01)
    ts.setMaxSteps(4)
    ts.setMaxTime(1.0)
    ts.getKSP().setType("cg")
    ts.getKSP().setTolerances(rtol=1e-8)
    u = inst.rhs.duplicate()
    u.set(1.0)
    with ksptrace.record(ts, OUT / "ts.h5", comm=COMM):
        ts.solve(u)
    emit(case="ts", steps=ts.getStepNumber(), linear=ts.getKSPIterations())


def blocks() -> None:
    """Seven record blocks on one KSP (PETSc allows five monitors per KSP, and a C monitor
    cannot be removed from it), beside the program's own monitor."""
    inst = laplacian()
    seen: list[int] = []
    inst.ksp.setMonitor(lambda ksp, its, rnorm: seen.append(its))
    solves, impls = [], []
    for block in range(7):
        with ksptrace.record(inst.ksp, OUT / f"block{block}.h5", comm=COMM) as rec:
            inst.reset()
            inst.solve()
            solves.append(rec.solves)
        impls.append(rec.monitor.impl)
    inst.reset()
    inst.solve()  # after the blocks: the program's monitor still runs, nothing is recorded
    emit(case="blocks", solves=solves, impls=impls, own_calls=len(seen),
         its=inst.ksp.getIterationNumber())


def many() -> None:
    """400 solves of 20 forced iterations: more slots than the first buffer holds."""
    inst = laplacian()
    inst.ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=20)
    with ksptrace.record(inst.ksp, OUT / "many.h5", comm=COMM) as rec:
        for _ in range(400):
            inst.reset()
            inst.solve()
        inside = rec.solves
    emit(case="many", inside=inside)


def aborted() -> None:
    """A solve stopped at iteration 30 of 50 by an exception the program catches, then a
    solve of 10 iterations: the stopped solve's stamps must not be read as the next one's."""
    inst = laplacian()
    inst.ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=50)
    armed = [True]

    def stop(ksp: Any, its: int, rnorm: float) -> None:
        if armed[0] and its == 30:
            raise RuntimeError("stop at 30")

    inst.ksp.setMonitor(stop)
    error = ""
    with ksptrace.record(inst.ksp, OUT / "aborted.h5", comm=COMM) as rec:
        inst.reset()
        try:
            inst.solve()
        except Exception as exc:  # petsc4py hands the monitor's exception on (3.26: as cause)
            cause = python_cause(exc) or exc
            error = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
        armed[0] = False
        inst.ksp.setTolerances(max_it=10)
        inst.reset()
        inst.solve()
        inside = rec.solves
    emit(case="aborted", inside=inside, error=error)


def gamg() -> None:
    """CG with GAMG: PCSetUp runs inside the first KSPSolve (issue 52: set-up apart)."""
    inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, 20_000, {})
    inst.ksp.setType("cg")
    inst.ksp.getPC().setType("gamg")
    inst.ksp.setTolerances(rtol=1e-8)
    with ksptrace.record(inst.ksp, OUT / "gamg.h5", comm=COMM):
        inst.reset()
        inst.solve()
    emit(case="gamg", its=inst.ksp.getIterationNumber())


def events() -> None:
    """--events through record: three CG solves, each iteration's MatMult, PCApply and dot
    products timed (CG's are VecTDot for real scalars)."""
    inst = laplacian()
    with ksptrace.record(inst.ksp, OUT / "events.h5", comm=COMM, events=True):
        for _ in range(3):
            inst.reset()
            inst.solve()
    emit(case="events", its=inst.ksp.getIterationNumber())


for case in (loop, raising, raising_on_one_rank, no_comm, newton, timestepping, blocks, many,
             aborted, gamg, events):
    case()
