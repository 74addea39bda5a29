"""Campaign overhead: what a local 20-run campaign costs beyond the solves themselves.

Per run, the overhead is the wall time of the whole run as the campaign sees it (bash task
script, ``ksptrace run``, mpiexec, Python and PETSc start-up, problem set-up, trace write) plus
the campaign's own validation of the trace, minus the KSPSolve time recorded in the trace.
Target: overhead <= 5% of the campaign's total wall time.

    python bench/campaign_overhead.py [--n 1000000] [--iterations 2000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from ksptrace.jobs import state
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.runner import run_campaign
from ksptrace.jobs.spec import RunSpec
from ksptrace.trace.read import read_trace

CAMPAIGN = """
[campaign]
name = "overhead"
output = "out"
repetitions = 5
command = '{python} -m ksptrace'

[sweep]
problem = "laplace1d"
n = {n}
ksp = ["gmres", "pgmres", "bcgs", "pipebcgs"]
pc = "jacobi"
nprocs = 1
iterations = {iterations}
"""

SOLVER_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
              "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="unknowns per run")
    parser.add_argument("--iterations", type=int, default=2000, help="forced iterations K")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).parent / "results" / "campaign_overhead.json")
    args = parser.parse_args()
    for key, value in SOLVER_ENV.items():
        os.environ.setdefault(key, value)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "overhead.toml"
        path.write_text(CAMPAIGN.format(python=sys.executable, n=args.n,
                                        iterations=args.iterations))
        spec = load_spec(path)
        finished: list[tuple[RunSpec, float, bool]] = []

        def progress(done: int, total: int, run: RunSpec, ok: bool, elapsed: float) -> None:
            finished.append((run, elapsed, ok))
            print(f"{done}/{total} {run.label} ok={ok} at {elapsed:.1f} s", file=sys.stderr)

        start = time.perf_counter()
        run_campaign(spec, get_backend("local"), progress=progress)
        total_wall = time.perf_counter() - start

        rows = []
        previous = 0.0
        for run, elapsed, ok in finished:
            if not ok:
                raise SystemExit(f"run {run.run_id} failed; see {spec.output / run.log}")
            t0 = time.perf_counter()
            problem = state.check_trace(spec.output, run.run_id, run.nprocs, args.iterations)
            validate = time.perf_counter() - t0
            assert problem is None, problem
            trace = read_trace(spec.output / run.trace)
            wall = elapsed - previous
            previous = elapsed
            rows.append({"run_id": run.run_id, "ksp": run.param("ksp"), "wall_s": wall,
                         "solve_s": trace.solve_max, "validate_s": validate,
                         "overhead_s": wall - trace.solve_max})

    solve = sum(r["solve_s"] for r in rows)
    overhead = total_wall - solve
    per_run = [r["overhead_s"] for r in rows]
    result = {
        "runs": len(rows), "n": args.n, "iterations": args.iterations, "nprocs": 1,
        "total_wall_s": round(total_wall, 3), "total_solve_s": round(solve, 3),
        "overhead_s": round(overhead, 3), "overhead_fraction": round(overhead / total_wall, 4),
        "overhead_per_run_mean_s": round(sum(per_run) / len(per_run), 3),
        "overhead_per_run_max_s": round(max(per_run), 3),
        "validate_per_run_mean_s": round(sum(r["validate_s"] for r in rows) / len(rows), 4),
        "target_fraction": 0.05, "meets_target": overhead / total_wall <= 0.05,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1min": os.getloadavg()[0]},
        "per_run": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "per_run"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
