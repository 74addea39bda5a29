"""Run under mpiexec by tests/harness/test_noise.py: the same solve with and without detours.

Prints one JSON line per KSP type from rank 0: whether the residual history is bit-identical,
the detours planned and actually spun, and the solve times.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from ksptrace.harness.petsc.petscenv import init_petsc

PETSc = init_petsc([])

from ksptrace.harness.runner.noise import wrap_pc  # noqa: E402
from ksptrace.noise.draw import rank_detours  # noqa: E402
from ksptrace.noise.spec import parse  # noqa: E402
from ksptrace.problems import registry  # noqa: E402

K = 150


def solve(ksp_type: str, noise: str | None) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    comm = PETSc.COMM_WORLD
    inst = registry.get("laplace1d").builder()(comm, 20_000, {})
    ksp = inst.ksp
    ksp.setType(ksp_type)
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=K)
    inst.set_from_options()
    norms: list[float] = []
    ksp.setMonitor(lambda _k, _its, rnorm: norms.append(rnorm))
    planned = np.zeros(K)
    injected = np.zeros(K)
    ctx = None
    if noise is not None:
        rank = comm.getRank()
        planned = rank_detours(parse(noise), rank, 0, K)
        ctx = wrap_pc(PETSc, ksp, planned)
    inst.prepare()
    comm.tompi4py().Barrier()
    start = time.perf_counter()
    inst.solve()
    seconds = time.perf_counter() - start
    if ctx is not None:
        injected = ctx.injected.copy()
    inst.destroy()
    return np.array(norms), seconds, planned, injected


def main() -> None:
    noise = sys.argv[1]
    mpicomm = PETSc.COMM_WORLD.tompi4py()
    for ksp_type in sys.argv[2:]:
        base, t0, _, _ = solve(ksp_type, None)
        noisy, t1, planned, injected = solve(ksp_type, noise)
        rows = mpicomm.gather((planned.tolist(), injected.tolist()), root=0)
        if mpicomm.Get_rank() == 0:
            print(json.dumps({
                "ksp": ksp_type, "identical": bool(np.array_equal(base, noisy)),
                "monitor_calls": len(base), "seconds_clean": t0, "seconds_noisy": t1,
                "planned": [r[0] for r in rows], "injected": [r[1] for r in rows],
            }), flush=True)


if __name__ == "__main__":
    main()
