"""Ice-flow (ex48) Jacobian assembly: time and peak memory at about 1e5 and 1e6 unknowns.

    python bench/iceflow_assembly.py [--np 2] [--n 100000 1000000] [--out bench/results/...]

The driver launches ``mpiexec -n NP`` on this file once per size; each worker builds the problem
(grid, DMDA, CSR pattern, matrix), then assembles the Newton Jacobian at a non-zero velocity state
(first assembly, then the best of REPEATS more). Times are the maximum over ranks, bracketed by
barriers; memory is each rank's peak resident set size (ru_maxrss), reported per rank and summed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results" / "iceflow_assembly.json"
REPEATS = 2
TARGETS = {"seconds": 30.0, "gib": 6.0, "at_unknowns": 1_000_000}


def worker(n: int, hom: str) -> None:
    import resource

    import petsc4py

    petsc4py.init([sys.argv[0]])
    import numpy as np
    from mpi4py import MPI
    from petsc4py import PETSc

    from ksptrace.problems.iceflow import build

    comm = PETSc.COMM_WORLD
    mpi = comm.tompi4py()

    def timed(fn: Any) -> float:
        mpi.Barrier()
        t0 = time.perf_counter()
        fn()
        mpi.Barrier()
        return float(mpi.allreduce(time.perf_counter() - t0, op=MPI.MAX))

    holder: dict[str, Any] = {}
    t_build = timed(lambda: holder.setdefault("inst", build(comm, n, {"hom": hom})))
    inst = holder["inst"]
    x = inst.x.duplicate()
    arr = x.getArray()
    arr[0::2] = 0.05 * (1 + np.sin(np.arange(arr.size // 2)))
    arr[1::2] = 0.01
    t_first = timed(lambda: inst.assembler.jacobian(x, inst.J))
    t_again = min(timed(lambda: inst.assembler.jacobian(x, inst.J)) for _ in range(REPEATS))
    t_residual = timed(lambda: inst.assembler.residual(x, inst.f))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peaks = mpi.gather(peak_kib, root=0)
    if comm.getRank() == 0:
        print(json.dumps({
            "unknowns": inst.n_global, "nnz": inst.nnz, "grid": [inst.grid.mx, inst.grid.my,
            inst.grid.mz], "hom": hom, "nprocs": comm.getSize(),
            "build_seconds": t_build, "jacobian_first_seconds": t_first,
            "jacobian_seconds": t_again, "residual_seconds": t_residual,
            "peak_rss_gib_per_rank": [p / 2**20 for p in peaks],
            "peak_rss_gib_total": sum(peaks) / 2**20,
        }), flush=True)
    inst.destroy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--hom", default="A")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.hom)
        return 0
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    runs = []
    for n in args.n:
        cmd = ["mpiexec", "-n", str(args.np), sys.executable, __file__, "--worker", str(n),
               "--hom", args.hom]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return proc.returncode
        run = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"n={run['unknowns']:>9} nnz={run['nnz']:>11} build {run['build_seconds']:.2f} s  "
            f"jacobian {run['jacobian_first_seconds']:.2f} s "
            f"(again {run['jacobian_seconds']:.2f} s)  residual {run['residual_seconds']:.2f} s  "
            f"peak {run['peak_rss_gib_total']:.2f} GiB",
            flush=True,
        )
        runs.append(run)
    result = {
        "benchmark": "iceflow_assembly", "targets": TARGETS, "runs": runs,
        "host": platform.node(), "cpu_count": os.cpu_count(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
