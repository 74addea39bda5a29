"""The two software stacks side by side (issue 34): Debian's PETSc 3.18.5 and the PyPI stack's
3.26.1 (``make stack-pypi``), measured in one run.

- **Bit-identical histories**: for gmres, pgmres, bcgs and pipebcgs at P = 1 and 2, ksptrace's
  residual history against a bare petsc4py ex23 solve on the same stack (tests/stack).
- **Instrument cost** on each stack: ``bench/instructions.py`` (callgrind instructions per
  iteration of ``ksptrace run`` and ``ksptrace.record`` over a bare solve; drift-free).
- **KSPSolve, PyPI over Debian**, at n = 10^5, P = 2, gmres + Jacobi, K = 600: ``ksptrace run``'s
  ``solve_max`` on each stack, measured in turn as Debian, PyPI, PyPI, Debian (then the
  reverse) so that a linear drift cancels; the ratio per round and their median.

    python bench/stacks.py [--rounds 6] [--out bench/results/stacks.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ksptrace.trace.read import read_trace  # noqa: E402
from tests.conftest import solver_env  # noqa: E402
from tests.stack import stacks  # noqa: E402
from tests.stack.test_stacks import BARE, KSPS, K, N  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "stacks.json"


def _run(stack: stacks.Stack, args: list[str]) -> str:
    proc = subprocess.run(args, env=stack.environ(solver_env()), capture_output=True, text=True,
                          cwd=ROOT, timeout=3600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} on {stack.name}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def histories(stack: stacks.Stack, folder: Path) -> list[dict[str, Any]]:
    rows = []
    for nprocs in (1, 2):
        bare = json.loads(_run(stack, ["mpiexec", "-n", str(nprocs), stack.python, str(BARE),
                                       str(N), str(K), *KSPS]).strip().splitlines()[-1])
        for ksp in KSPS:
            out = folder / f"{stack.name}-{ksp}-{nprocs}.h5"
            _run(stack, [stack.python, "-m", "ksptrace", "run", "--np", str(nprocs), "--ksp", ksp,
                         "--n", str(N), "--iterations", str(K), "--out", str(out), "--overwrite"])
            got = read_trace(out).residual_norms
            want = np.array([float.fromhex(v) for v in bare["histories"][ksp]])
            rows.append({"ksp": ksp, "P": nprocs, "iterations": K, "n": N,
                         "bit_identical": bool(np.array_equal(got, want)),
                         "max_abs_difference": float(np.max(np.abs(got - want)))})
    return rows


def instructions(stack: stacks.Stack, folder: Path) -> dict[str, Any]:
    out = folder / f"instructions-{stack.name}.json"
    _run(stack, [stack.python, str(ROOT / "bench" / "instructions.py"), "--out", str(out)])
    found: dict[str, Any] = json.loads(out.read_text())
    return {str(c["unknowns"]): c["ratio"] for c in found["cases"]}


def solve_seconds(stack: stacks.Stack, folder: Path) -> float:
    out = folder / f"solve-{stack.name}.h5"
    _run(stack, [stack.python, "-m", "ksptrace", "run", "--np", "2", "--ksp", "gmres",
                 "--n", "100000", "--iterations", "600", "--out", str(out), "--overwrite"])
    return float(read_trace(out).solve_seconds.max())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    pypi = stacks.pypi()
    if isinstance(pypi, str):
        raise SystemExit(f"bench/stacks.py: {pypi}")
    both = {"debian": stacks.debian(), "pypi": pypi}
    started, load_before = time.time(), os.getloadavg()
    result: dict[str, Any] = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "loadavg_before": load_before}
    with tempfile.TemporaryDirectory(prefix="ksptrace-stacks-") as tmp:
        folder = Path(tmp)
        for name, stack in both.items():
            rows = histories(stack, folder)
            result[f"{name}_histories"] = rows
            print(f"{name}: histories bit-identical to bare petsc4py: "
                  f"{sum(r['bit_identical'] for r in rows)}/{len(rows)}", flush=True)
        for name, stack in both.items():
            result[f"{name}_instruction_ratios"] = instructions(stack, folder)
            print(f"{name}: instruction ratios {result[f'{name}_instruction_ratios']}", flush=True)
        ratios = []
        for r in range(args.rounds):
            order = ("debian", "pypi", "pypi", "debian") if r % 2 == 0 else \
                ("pypi", "debian", "debian", "pypi")
            seconds: dict[str, list[float]] = {"debian": [], "pypi": []}
            for name in order:
                seconds[name].append(solve_seconds(both[name], folder))
            ratios.append(sum(seconds["pypi"]) / sum(seconds["debian"]))
            print(f"round {r + 1}: KSPSolve PyPI/Debian {ratios[-1]:.4f} (Debian "
                  f"{np.mean(seconds['debian']):.4f} s, PyPI {np.mean(seconds['pypi']):.4f} s)",
                  flush=True)
    result["kspsolve_pypi_over_debian"] = {"case": "gmres + jacobi, n = 1e5, P = 2, K = 600",
                                           "per_round": ratios,
                                           "median": float(np.median(ratios))}
    result["versions"] = {name: {"python": s.python, **s.env} for name, s in both.items()}
    result["minutes"] = (time.time() - started) / 60
    result["loadavg_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"KSPSolve PyPI/Debian median {result['kspsolve_pypi_over_debian']['median']:.4f}; "
          f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
