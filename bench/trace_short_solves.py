"""``ksptrace trace``'s cost on short solves (issue 64): 30 iterations of 10^3 unknowns.

ksptrace's own ``laplace1d`` (tests/harness/hook/laplace1d.c, built in a temporary folder)
solves the 1-D Laplacian of 10^3 rows S times with CG + Jacobi forced to 30 iterations, at
P = 1, bare and with the solve hook preloaded exactly as ``ksptrace trace`` does.

The hook runs as ``trace`` runs it: with MPI wait accounting (the interposer ``mpi_wait.c``
loaded by the hook, its totals copied at each stamp) unless ``--no-waits``.

1. Instructions, under callgrind: with S1 and S2 solves, the hook's extra per solve is
   ((I_hook(S2) - I_hook(S1)) - (I_bare(S2) - I_bare(S1))) / (S2 - S1), start-up and the end
   excluded; a bare KSPSolve's own instructions per solve come from callgrind's inclusive count
   of KSPSolve, the same difference. The ratio is 1 + extra / KSPSolve. Kernel instructions
   (a system call) are not counted: the hook makes none per solve. Only the main thread is
   counted: Open MPI's helper threads poll by the clock, so theirs vary from run to run.
2. Wall time: the same program, bare and hooked, ROUNDS times interleaved, with ``-time``: it
   times each of its KSPSolve calls with MPI_Wtime (the hook's wrapper inside the span when
   preloaded) and prints their median and least. The ratio is hooked / bare of the median over
   rounds of each run's median (and of the least). A machine shared with other users moves
   both; the load average is recorded beside them.

    python bench/trace_short_solves.py [--no-waits] [--out bench/results/trace_short_solves.json]
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

from ksptrace.harness.hook import build  # noqa: E402
from tests.harness.hook import own_program  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "trace_short_solves.json"
FORCED = ["-n", "1000", "-ksp_max_it", "30", "-ksp_rtol", "1e-300", "-ksp_atol", "0",
          "-ksp_divtol", "1e300"]
CALLGRIND_SOLVES = (50, 150)
TIMED_SOLVES = 1000
ROUNDS = 15
"""Runs of one configuration differ by a few us per solve, whichever runs first (memory layout):
many rounds, and medians."""


WAITS: list[str] = []
"""The interposer's path, handed to the hook as ``trace`` does (empty: no wait accounting)."""


def _env(hook: Path | None, raw: Path | None) -> dict[str, str]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("KSPTRACE_HOOK_WAITS", None)
    if hook is not None and raw is not None:
        env.update(LD_PRELOAD=str(hook), KSPTRACE_HOOK_DIR=str(raw), KSPTRACE_HOOK_SETUP="0")
        if WAITS:
            env["KSPTRACE_HOOK_WAITS"] = WAITS[0]
    return env


def _raw(folder: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix="raw-", dir=folder))


def callgrind(program: Path, solves: int, folder: Path, hook: Path | None) -> tuple[int, int]:
    """(the whole process's instructions, KSPSolve's inclusive ones: bare runs only, as
    callgrind names the hook's KSPSolve and PETSc's alike)."""
    log = folder / f"{'hook' if hook else 'bare'}-{solves}.cg"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={log}",
           "--separate-threads=yes", str(program),
           *FORCED, "-solves", str(solves)]
    proc = subprocess.run(cmd, env=_env(hook, _raw(folder)), capture_output=True, text=True,
                          timeout=3600, check=False)
    if proc.returncode != 0 or proc.stdout.count(": 30 iterations") != solves:
        raise SystemExit(f"laplace1d under callgrind: {proc.stdout[-300:]} {proc.stderr[-1000:]}")
    main = log.with_name(log.name + "-01")  # the main thread: MPI's helper threads poll by time
    total = re.search(r"^summary:\s+(\d+)", main.read_text(), re.MULTILINE)
    notes = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(main)],
                           capture_output=True, text=True, check=True).stdout
    ksp = re.search(r"^\s*([\d,]+) .*:KSPSolve \[.*libpetsc", notes, re.MULTILINE)
    if total is None or (ksp is None and hook is None):
        raise SystemExit(f"no totals in {log}")
    return int(total.group(1)), -1 if ksp is None else int(ksp.group(1).replace(",", ""))


def timed(program: Path, folder: Path, hook: Path | None) -> tuple[float, float]:
    """(median, least) of one run's KSPSolve spans, as the program measured them."""
    proc = subprocess.run([str(program), *FORCED, "-solves", str(TIMED_SOLVES), "-time"],
                          env=_env(hook, _raw(folder)), capture_output=True, text=True,
                          timeout=600, check=False)
    found = re.search(r"kspsolve median (\S+) least (\S+)", proc.stdout)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"laplace1d failed: {proc.stderr[-1000:]}")
    return float(found.group(1)), float(found.group(2))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--no-waits", action="store_true", help="the hook without wait accounting")
    args = ap.parse_args()
    if not args.no_waits:
        from ksptrace.harness.monitoring import mpiwait

        found = mpiwait.load()
        if isinstance(found, str):
            raise SystemExit(f"no MPI wait interposer: {found}")
        WAITS.append(str(found[1]))
    pdir = own_program.petsc_dir()
    why = own_program.missing(pdir)
    if why is not None:
        raise SystemExit(why)
    started, load0 = time.time(), os.getloadavg()
    hook = build.library()
    with tempfile.TemporaryDirectory(prefix="ksptrace-short-bench-") as tmp:
        folder = Path(tmp)
        program = own_program.build(folder, pdir)
        s1, s2 = CALLGRIND_SOLVES
        got = {(h, s): callgrind(program, s, folder, hook if h else None)
               for h in (False, True) for s in (s1, s2)}
        extra = ((got[True, s2][0] - got[True, s1][0]) - (got[False, s2][0] - got[False, s1][0]))
        per_solve = (got[False, s2][1] - got[False, s1][1]) / (s2 - s1)
        ins = {"solves": [s1, s2], "extra_per_solve": extra / (s2 - s1),
               "kspsolve_per_solve": per_solve, "ratio": 1 + extra / (s2 - s1) / per_solve}
        print(f"instructions: KSPSolve {per_solve:,.0f} per solve, the hook "
              f"{extra / (s2 - s1):,.0f} more: ratio {ins['ratio']:.4f}", flush=True)
        runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for r in range(ROUNDS):
            for h in (False, True) if r % 2 == 0 else (True, False):
                runs[h].append(timed(program, folder, hook if h else None))
        times: dict[str, Any] = {"solves": TIMED_SOLVES, "rounds": ROUNDS,
                                 "runs_s": {"bare": runs[False], "hook": runs[True]}}
        for k, what in enumerate(("median", "least")):
            bare = statistics.median(v[k] for v in runs[False])
            mine = statistics.median(v[k] for v in runs[True])
            times[what] = {"bare_s": bare, "hook_s": mine, "ratio": mine / bare}
            print(f"wall, {what} KSPSolve: bare {bare * 1e6:.2f} us, hooked {mine * 1e6:.2f} us: "
                  f"ratio {mine / bare:.4f}", flush=True)
    result = {"what": "ksptrace trace on short solves: laplace1d, 10^3 rows, CG + Jacobi forced "
                      "to 30 iterations, P = 1, bare against hooked", "instructions": ins,
              "wait_accounting": bool(WAITS),
              "time": times, "minutes": (time.time() - started) / 60, "loadavg_before": load0,
              "loadavg_after": os.getloadavg(), "cpu_count": os.cpu_count(),
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
