"""``ksptrace demo``: the main job. A small sweep of every solver, a table, and the report."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from ksptrace.errors import KsptraceError, SolverError
from ksptrace.trace.frame import traces_to_frame
from ksptrace.trace.io import read_trace

DEMO_SOLVERS = ("gmres", "pgmres", "bcgs", "pipebcgs")
DEMO_PROCS = (1, 2)


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the demo sweep and print its table",
                       allow_abbrev=False)
    p.add_argument("--out", default="demo-out", help="folder for traces and report")
    p.add_argument("--n", type=int, default=100_000, help="laplace1d unknowns")
    p.add_argument("--iterations", type=int, default=1000, help="forced iterations K")
    p.set_defaults(func=main)


def format_table(rows: list[dict[str, Any]]) -> str:
    """The demo's table: one line per run, times in milliseconds."""
    head = (f"{'problem':<10} {'solver':<9} {'P':>2} {'K':>5} {'KSPSolve max':>13} "
            f"{'sum_k max_p T':>14} {'mean T_p^k':>11} {'rank spread':>12}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['problem']:<10} {r['ksp']:<9} {r['nprocs']:>2} {r['iterations']:>5} "
            f"{r['solve_max'] * 1e3:>10.2f} ms {r['sum_max_iteration'] * 1e3:>11.2f} ms "
            f"{r['mean_iteration'] * 1e6:>8.2f} us {r['rank_spread'] * 1e3:>9.3f} ms"
        )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    traces_dir = out / "traces"
    traces_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for nprocs in DEMO_PROCS:
        for ksp in DEMO_SOLVERS:
            path = traces_dir / f"laplace1d_{ksp}_P{nprocs}.h5"
            cmd = [sys.executable, "-m", "ksptrace", "run", "--problem", "laplace1d",
                   "--n", str(args.n), "--ksp", ksp, "--iterations", str(args.iterations),
                   "--np", str(nprocs), "--out", str(path), "--overwrite"]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise SolverError(f"demo run {ksp} on {nprocs} ranks failed: {last}")
            print(proc.stdout.strip(), file=sys.stderr)
            paths.append(path)
    try:
        frame = traces_to_frame(read_trace(p) for p in paths)
    except KsptraceError:
        raise
    print(format_table(frame.to_dict("records")))
    return 0
