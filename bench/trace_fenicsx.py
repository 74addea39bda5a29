"""FEniCSx traced unmodified (issue 53): Debian's dolfinx 0.5.2 elasticity demo under
``ksptrace trace``, against the same demo untraced.

The demo (``/usr/share/dolfinx/demo-python/demo_elasticity.py``, from ``dolfinx-doc``) solves
linear elasticity with CG and GAMG on two ranks and prints its own monitor's residual norms
(``Iteration: k, rel. residual: r``, Python's full precision). The trace's norms must be
exactly those; its set-up (GAMG's hierarchy, inside the first KSPSolve) is kept apart. Wall
times of ROUNDS interleaved pairs (traced, bare) after one warm-up run that fills dolfinx's
form cache (its JIT compiles with gcc). Install: ``bash scripts/bootstrap.sh --fenicsx``.

    python bench/trace_fenicsx.py [--out bench/results/trace_fenicsx.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ksptrace.trace.io import read_trace  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "trace_fenicsx.json"
DEMO = Path("/usr/share/dolfinx/demo-python/demo_elasticity.py")
PYTHON = "/usr/bin/python3"  # Debian's, which imports dolfinx
ROUNDS = 3
INSTALL = {"packages": 63, "installed_mb": 123.0, "seconds": 45,
           "how": "apt's 'After this operation' (98.9 MB python3-dolfinx-real with 58 "
                  "dependencies, 32 s; 24.1 MB dolfinx-doc with 3, about 12 s), "
                  "on this VM at load 9-12"}
PRINTED = re.compile(r"Iteration: (\d+), rel\. residual: ([0-9.]+(?:e[-+]\d+)?)")
"""Not anchored to lines: the two ranks' prints reach mpiexec's output interleaved."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PETSC_DIR"}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return env


def _run(cmd: list[str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(), cwd=cwd, capture_output=True, text=True,
                          timeout=1800, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed: {proc.stderr.strip()[-2000:]}")
    return time.perf_counter() - t0, proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    if not DEMO.is_file():
        raise SystemExit(f"{DEMO} is missing: bash scripts/bootstrap.sh --fenicsx installs it")
    started, load0 = time.time(), os.getloadavg()
    bare = ["mpiexec", "-n", "2", PYTHON, str(DEMO)]
    bare_s, traced_s, checks = [], [], []
    with tempfile.TemporaryDirectory(prefix="ksptrace-fenicsx-") as tmp:
        work = Path(tmp)
        _run(bare, work)  # warm-up: dolfinx compiles its forms once
        for r in range(ROUNDS):
            out = work / f"traces-{r}"
            traced = [sys.executable, "-m", "ksptrace", "trace", "--out", str(out), "--", *bare]
            t_traced, stdout = _run(traced, work)
            t_bare, _ = _run(bare, work)
            bare_s.append(t_bare)
            traced_s.append(t_traced)
            printed = {int(k): float(v) for k, v in PRINTED.findall(stdout)}
            (path,) = out.glob("*.h5")
            trace = read_trace(path)
            assert trace.solves is not None
            norms = [printed[k] for k in sorted(printed)]
            same = norms == trace.residual_norms.tolist()
            checks.append({"trace": path.name, "ksp": trace.attrs["ksp"],
                           "pc": trace.attrs["pc"], "nprocs": trace.nprocs,
                           "iterations": trace.solves.iterations.tolist(),
                           "norms_equal_demo_monitor": same,
                           "setup_seconds": trace.attrs["setup_seconds"],
                           "solve_seconds": trace.solves.seconds.max(axis=0).tolist()})
            print(f"round {r + 1}: traced {t_traced:.2f} s, bare {t_bare:.2f} s; "
                  f"{trace.attrs['ksp']}/{trace.attrs['pc']} "
                  f"{trace.solves.iterations.tolist()} iterations, norms equal: {same}",
                  flush=True)
    result: dict[str, Any] = {
        "what": "dolfinx 0.5.2 demo_elasticity.py on 2 ranks, traced unmodified by ksptrace "
                "trace against the same demo untraced (wall seconds of whole runs)",
        "install": INSTALL, "checks": checks, "bare_s": bare_s, "traced_s": traced_s,
        "median_extra_s": statistics.median(t - b for t, b in zip(traced_s, bare_s,
                                                                   strict=True)),
        "minutes": (time.time() - started) / 60, "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0 if all(c["norms_equal_demo_monitor"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
