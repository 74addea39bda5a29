"""Run by tests/harness/test_record_lifetime.py (under mpiexec, optionally under AddressSanitizer):
``ksptrace.record`` scenarios that stress the C monitor context's lifetime.

Arguments: an empty folder for the traces, then the scenario: ``cancel`` (record, cancel the
KSP's monitors, record again, collect garbage), ``destroy`` (the KSP destroyed inside a block),
``blocks8`` (eight blocks on one KSP), ``threads`` (blocks on two KSPs from two threads),
``nested`` (a block inside a block on the same KSP). Prints one JSON line from rank 0.
"""

from __future__ import annotations

import gc
import json
import sys
import threading
from pathlib import Path
from typing import Any

from ksptrace.harness.petsc.petscenv import init_petsc

PETSc = init_petsc([])

from mpi4py import MPI  # noqa: E402

import ksptrace  # noqa: E402
from ksptrace.errors import KsptraceError  # noqa: E402
from ksptrace.problems import registry  # noqa: E402

COMM = MPI.COMM_WORLD
OUT = Path(sys.argv[1])


def emit(**row: Any) -> None:
    if COMM.rank == 0:
        print(json.dumps(row), flush=True)


def laplacian(comm: Any = None) -> Any:
    inst = registry.get("laplace1d").build(comm or PETSc.COMM_WORLD, 200, {})
    inst.ksp.setType("cg")
    inst.ksp.setTolerances(rtol=1e-8)
    return inst


def solve(inst: Any) -> None:
    inst.reset()
    inst.solve()


def cancel() -> None:
    inst = laplacian()
    with ksptrace.record(inst.ksp, OUT / "a.h5", comm=COMM):
        solve(inst)
    inst.ksp.monitorCancel()
    with ksptrace.record(inst.ksp, OUT / "b.h5", comm=COMM) as rec:
        solve(inst)
        solve(inst)
        inside = rec.solves
    gc.collect()
    solve(inst)  # no monitor left: nothing may be written
    gc.collect()
    emit(case="cancel", inside=inside)


def destroy() -> None:
    inst = laplacian()
    try:
        with ksptrace.record(inst.ksp, OUT / "d.h5", comm=COMM):
            solve(inst)
            inst.ksp.destroy()
    except KsptraceError as exc:
        emit(case="destroy", error=str(exc))
        return
    emit(case="destroy", error=None)


def blocks8() -> None:
    inst = laplacian()
    counts = []
    for k in range(8):
        with ksptrace.record(inst.ksp, OUT / f"b{k}.h5", comm=COMM) as rec:
            for _ in range(k % 3 + 1):
                solve(inst)
            counts.append(rec.solves)
        gc.collect()
    emit(case="blocks8", counts=counts)


def threads() -> None:
    counts: dict[int, int] = {}

    def work(k: int) -> None:
        inst = laplacian(PETSc.COMM_SELF)
        with ksptrace.record(inst.ksp, OUT / f"t{COMM.rank}-{k}.h5", comm=MPI.COMM_SELF) as rec:
            for _ in range(3):
                solve(inst)
            counts[k] = rec.solves
        del inst
        gc.collect()

    pool = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    emit(case="threads", counts=[counts.get(0), counts.get(1)])


def nested() -> None:
    inst = laplacian()
    try:
        with ksptrace.record(inst.ksp, OUT / "outer.h5", comm=COMM) as outer:
            solve(inst)
            with ksptrace.record(inst.ksp, OUT / "inner.h5", comm=COMM) as inner:
                solve(inst)
            solve(inst)
            solve(inst)
    except KsptraceError as exc:
        emit(case="nested", error=str(exc))
        return
    emit(case="nested", error=None, outer=outer.solves, inner=inner.solves)


if __name__ == "__main__":
    {"cancel": cancel, "destroy": destroy, "blocks8": blocks8, "threads": threads,
     "nested": nested}[sys.argv[2]]()
