"""Issue 35's throughput targets for ``ksptrace analyze``, each against a baseline in the same run.

The baseline is the package as it was at ``--baseline`` (a commit), unpacked with ``git
archive`` into a temporary folder and run with ``PYTHONPATH`` pointing at it. By default it is
e296c0d, the package as issue 35 found it (the commit before its first change, 304fd40), so
that the issue's "12x today" and "5x today" are ratios in the same run; entries before
2026-11-26 19:30 used 1c9905a, which had that first change and still fitted nct.
Cases:

* ``demo``: 32 demo-size traces (2 ranks x 1000 iterations, the package's synthetic generator,
  GMRES, PGMRES, BiCGSTAB, PIPEBiCGSTAB) analysed without figures (``--jobs 1``, and ``--jobs 2``
  without a baseline), and with figures (``--jobs 1`` and ``--jobs 2``). Targets: 0.1 s per
  trace without figures, 10 s for the 32 with figures.
* ``campaign``: 1,000 such traces with ``--jobs 2`` and no figures, with the peak memory of the
  process tree (sampled every 0.5 s: see CAMPAIGN_SAMPLE_SECONDS). Target: 120 s.
* ``paper``: one 8192 x 5000 trace end to end, beside the floor: reading the file and sorting each
  rank's iterations once, in a process of its own. Target: 6 s.

Every timed run also records ``cpu_seconds``, the user + system seconds of its process tree (the
machine is shared: wall seconds follow the load, CPU seconds much less), and the paper case the
floor process's (``floor_process_cpu_seconds``, its imports included: the floor's own seconds
time only the read and the sort).

    python bench/analysis_throughput.py [--only demo] [--baseline COMMIT]

Both packages are byte-compiled first (``compileall``), as an installed package is: pip
compiles on install, and Python writes the bytecode at the first import. Where
PYTHONDONTWRITEBYTECODE is set (as in the project's sandbox) nothing would be written, and every
timed run would compile the package's 220 modules again, about 0.1 s a process (entries with
"bytecode" set; earlier ones compiled in every run).

Writes bench/results/analysis_throughput.json (one entry per run, appended).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from analysis_campaign import append_entry, loadavg, run_cli

from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "analysis_throughput.json"
TARGETS = {"demo_seconds_per_trace": 0.1, "demo_with_figures_seconds": 10.0,
           "campaign_1000_seconds": 120.0, "paper_trace_seconds": 6.0}
CASES = ("demo", "campaign", "paper")
CAMPAIGN_SAMPLE_SECONDS = 0.5
"""The campaign's memory is sampled twice a second: at 20 samples a second the sampler's reads
of /proc took a quarter of the 2 cores (bench/analysis_campaign.py:run_cli)."""
KSPS = ("gmres", "pgmres", "bcgs", "pipebcgs")
FLOOR = """
import sys, time
import numpy as np
from ksptrace.trace.read import read_trace
t0 = time.perf_counter()
times = read_trace(sys.argv[1]).iteration_seconds
np.sort(times, axis=1)
print(time.perf_counter() - t0)
"""


def run(args: list[str], pythonpath: Path | None = None, memory: bool = True,
        interval: float = 0.05) -> dict[str, float]:
    """``python -m ksptrace ARGS`` (from ``pythonpath`` when given): the wall seconds of a run
    that nothing watches, and with ``memory`` the peak PSS of a second run, sampled every
    ``interval`` s. The sampler is kept out of the timed run: reading smaps_rollup of a
    paper-scale process 20 times a second cost it 0.6 s of its 6 s (6.36-6.6 s against
    5.79-5.87 s sampled every 0.5 s, 2026-11-26)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, float] = {"seconds": run_cli(args, pythonpath, None)["seconds"],
                             "cpu_seconds": _cpu_since(before),
                             "load_avg_1min_after": loadavg()}
    if memory:
        sampled = run_cli(args, pythonpath, interval)
        out.update(peak_gib=sampled["peak_gib"], memory_sample_seconds=interval,
                   sampled_run_seconds=sampled["seconds"])
    return out


def _cpu_since(before: resource.struct_rusage) -> float:
    """User + system seconds of the children waited for since ``before``."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2)


def traces(folder: Path, count: int) -> list[str]:
    folder.mkdir()
    for i in range(count):
        write_trace(synthetic_trace(2, 1000, 2, KSPS[i % 4], seed=i, n=10_000 * (1 + i % 3)),
                    folder / f"t{i:04d}.h5")
    return [str(p) for p in sorted(folder.glob("*.h5"))]


def demo(work: Path, base: Path) -> dict[str, Any]:
    paths = traces(work / "demo", 32)
    out: dict[str, Any] = {"traces": 32, "ranks": 2, "iterations": 1000}
    for label, extra, where in (
            ("no_figures", ["--no-figures"], None),
            ("no_figures_baseline", ["--no-figures"], base),
            ("no_figures_jobs2", ["--no-figures", "--jobs", "2"], None),
            ("figures", [], None),
            ("figures_baseline", [], base),
            ("figures_jobs2", ["--jobs", "2"], None),
            ("figures_jobs2_baseline", ["--jobs", "2"], base)):
        out[label] = run(["analyze", *paths, "--out", str(work / f"r-{label}"), "--no-cache",
                          "--quiet", *extra], where, memory=where is None)
        print(label, out[label], flush=True)
    out["no_figures_seconds_per_trace"] = round(out["no_figures"]["seconds"] / 32, 3)
    out["no_figures_jobs2_seconds_per_trace"] = round(out["no_figures_jobs2"]["seconds"] / 32, 3)
    out["no_figures_speedup"] = round(out["no_figures_baseline"]["seconds"]
                                      / out["no_figures"]["seconds"], 2)
    out["figures_speedup"] = round(out["figures_baseline"]["seconds"]
                                   / out["figures"]["seconds"], 2)
    out["figures_jobs2_speedup"] = round(out["figures_jobs2_baseline"]["seconds"]
                                         / out["figures_jobs2"]["seconds"], 2)
    return out


def campaign(work: Path) -> dict[str, Any]:
    paths = traces(work / "campaign", 1000)
    out = run(["analyze", *paths, "--out", str(work / "r-campaign"), "--no-cache", "--quiet",
               "--no-figures", "--jobs", "2"], interval=CAMPAIGN_SAMPLE_SECONDS)
    print("campaign", out, flush=True)
    return {"traces": 1000, "jobs": 2, **out}


def paper(work: Path, base: Path) -> dict[str, Any]:
    path = work / "paper.h5"
    write_trace(synthetic_trace(8192, 5000, 64, "gmres", seed=0), path)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    floor = float(subprocess.run([sys.executable, "-c", FLOOR, str(path)], env=env, text=True,
                                 capture_output=True, check=True).stdout)
    out: dict[str, Any] = {"nprocs": 8192, "iterations": 5000,
                           "read_and_sort_floor_seconds": round(floor, 2),
                           "floor_process_cpu_seconds": _cpu_since(before)}
    for label, where in (("now", None), ("baseline", base)):
        out[label] = run(["analyze", str(path), "--out", str(work / f"r-paper-{label}"),
                          "--no-cache", "--quiet"], where, memory=where is None)
        print("paper", label, out[label], flush=True)
    out["speedup"] = round(out["baseline"]["seconds"] / out["now"]["seconds"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=CASES, action="append")
    parser.add_argument("--baseline", default="e296c0d")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ksptrace-throughput-"))
    base = work / "baseline"
    base.mkdir()
    archive = subprocess.run(["git", "archive", args.baseline, "ksptrace"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    for tree in (ROOT / "ksptrace", base / "ksptrace"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
    entry: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "baseline": args.baseline,
                             "load_avg_1min_start": loadavg(), "targets": TARGETS,
                             "bytecode": "compiled before timing"}
    try:
        for case in args.only or CASES:
            entry[case] = (demo(work, base) if case == "demo" else campaign(work)
                           if case == "campaign" else paper(work, base))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    entry["load_avg_1min_end"] = loadavg()
    append_entry(args.out, entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
