"""The instrument's cost in instructions, which no load or drift disturbs (issue 28).

Each of a bare petsc4py solve, ``ksptrace run`` and a solve inside ``ksptrace.record`` runs
under callgrind at P = 1 (one process, GMRES + Jacobi on the 1-D Laplacian, K forced
iterations), once with K1 and once with K2 iterations; the difference of the whole process's
instruction counts divided by K2 - K1 is the cost of one iteration, start-up and writing
excluded. The ratio of an instrument's to the bare solve's is the end-to-end ratio a machine
without drift would measure, up to cache effects (instructions, not cycles).

    python bench/instructions.py [--out bench/results/instructions.json]

P = 2 is left out: a rank waiting in a reduction spins, so its instruction count follows the
other rank's speed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.overhead import SOLVE, _env  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "instructions.json"
CASES = ((1_000, 1_000, 3_000), (100_000, 100, 300))  # (unknowns, K1, K2)
KINDS = ("bare", "run", "record")


def _command(kind: str, n: int, k: int, out: Path) -> list[str]:
    if kind == "run":
        return [sys.executable, "-m", "ksptrace", "run", "--n", str(n), "--iterations", str(k),
                "--out", str(out), "--overwrite"]
    return [sys.executable, "-c", SOLVE, kind, str(n), str(k), str(out)]


def instructions(kind: str, n: int, k: int, folder: Path) -> int:
    """Instructions the whole process of ``kind`` executed (callgrind's total)."""
    log = folder / f"{kind}-{n}-{k}.cg"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={log}", "--trace-children=no",
           *_command(kind, n, k, folder / f"{kind}.h5")]
    proc = subprocess.run(cmd, env=_env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=3600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} under callgrind failed: {proc.stderr.strip()[-2000:]}")
    found = re.search(r"^(?:summary|totals):\s+(\d+)", log.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"no instruction total in {log}")
    return int(found.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    started = time.time()
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ksptrace-instructions-") as tmp:
        for n, k1, k2 in CASES:
            per: dict[str, float] = {}
            for kind in KINDS:
                low = instructions(kind, n, k1, Path(tmp))
                high = instructions(kind, n, k2, Path(tmp))
                per[kind] = (high - low) / (k2 - k1)
            case: dict[str, Any] = {"unknowns": n, "k1": k1, "k2": k2, "per_iteration": per,
                    "ratio": {kind: per[kind] / per["bare"] for kind in KINDS[1:]},
                    "extra_per_iteration": {kind: per[kind] - per["bare"]
                                            for kind in KINDS[1:]}}
            cases.append(case)
            print(f"n = {n}: bare {per['bare']:,.0f} instructions per iteration; "
                  + "; ".join(f"{kind} {case['ratio'][kind]:.5f} "
                              f"({case['extra_per_iteration'][kind]:+,.0f})"
                              for kind in KINDS[1:]), flush=True)
    result = {"what": "instructions per iteration under callgrind, P = 1, whole process, "
                      "K2 minus K1", "cases": cases, "minutes": (time.time() - started) / 60,
              "loadavg": os.getloadavg(),
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
