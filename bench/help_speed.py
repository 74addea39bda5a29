"""How fast ``ksptrace COMMAND --help`` answers, against ``ksptrace --version`` in the same run
(issue 31: every --help within 0.3 s and within 3 times --version).

Each command is started ``--repeats`` times as its own process, in rotated order; the median
wall time of each is reported, with its ratio to the median of ``--version``.

    python bench/help_speed.py [--repeats 7] [--out bench/results/help_speed.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ksptrace.cli.main import SUBCOMMANDS  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "help_speed.json"
LIMIT_SECONDS = 0.3
LIMIT_RATIO = 3.0


def seconds(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ksptrace", *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=str(RESULTS))
    opts = ap.parse_args()
    cases = [["--version"], ["--help"], *([c, "--help"] for c in sorted(SUBCOMMANDS))]
    times: dict[str, list[float]] = {" ".join(c): [] for c in cases}
    load = os.getloadavg()
    for r in range(opts.repeats):
        for c in cases[r % len(cases):] + cases[:r % len(cases)]:
            times[" ".join(c)].append(seconds(c))
    median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    base = median["--version"]
    rows = {k: {"median_s": m, "ratio_to_version": m / base,
                "met": m <= LIMIT_SECONDS and m / base <= LIMIT_RATIO}
            for k, m in median.items()}
    result = {"loadavg_before": load, "loadavg_after": os.getloadavg(),
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "repeats": opts.repeats, "limits": {"seconds": LIMIT_SECONDS,
                                                  "ratio": LIMIT_RATIO},
              "commands": rows, "all_met": all(r["met"] for r in rows.values())}
    Path(opts.out).write_text(json.dumps(result, indent=1) + "\n")
    for k, r in rows.items():
        print(f"{k:24} {r['median_s']:.3f} s  {r['ratio_to_version']:.2f}x  "
              f"{'met' if r['met'] else 'MISSED'}")
    print(f"load {load[0]:.2f} -> {result['loadavg_after'][0]:.2f}; "
          f"{'all met' if result['all_met'] else 'some MISSED'}; {opts.out}")
    return 0 if result["all_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
