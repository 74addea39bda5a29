"""What a user waits for: ``ksptrace analyze`` end to end (start-up, read, analysis, report) on
paper-scale trace files, and on a campaign of many traces with ``--jobs 1`` against
``--jobs 2`` and against a rerun that finds every trace in the cache.

Each case runs the real command in a subprocess. Its peak memory is the largest sum of the
proportional set sizes (PSS) of the command and all its descendants, sampled every 50 ms from
/proc/PID/smaps_rollup: the physical memory the process tree holds. The largest sum of their
resident sets, which counts shared pages once per process, is recorded beside it. The naive
route (scipy's ks_2samp per rank pair, quad per iteration) is timed on a subset in the same run
and extrapolated to the whole trace, as bench/analysis_scale.py does. Writes
bench/results/analysis_campaign.json.

    python bench/analysis_campaign.py [--big-iterations 20000] [--traces 24]
    python bench/analysis_campaign.py --only paper_campaign [--paper-traces 60]

``--only CASE`` runs one case (one_trace, big_trace, campaign, paper_campaign) and keeps the
other cases' figures from the existing results file. ``paper_campaign`` is the paper's scale:
60 distinct traces of 8192 x 5000 (about 20 GB of files, written to --workdir), analysed with
``--jobs 2``, the more memory-hungry setting; it takes about 15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.stats as st

from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

RESULT = Path(__file__).resolve().parent / "results" / "analysis_campaign.json"
TARGETS = {"one_trace_seconds": 15.0, "big_trace_seconds": 60.0, "big_trace_gib": 4.0,
           "campaign_gib": 4.0, "jobs2_speedup": 1.7, "paper_campaign_gib": 4.0}
CASES = ("one_trace", "big_trace", "campaign", "paper_campaign")


def _tree_memory(pid: int) -> tuple[int, int]:
    """Proportional and resident bytes of ``pid`` and every descendant ((0, 0) once gone).

    The proportional set size (PSS) charges a page shared by n processes 1/n to each, so its sum
    over the tree is the physical memory the tree holds. The sum of resident sets counts such a
    page n times (shared libraries, the shared map a trace is read into), and is kept beside it.
    """
    pss, rss, todo = 0, 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return pss, rss


def run_cli(args: list[str], pythonpath: Path | None = None,
            interval: float | None = 0.05) -> dict[str, float]:
    """Run ``python -m ksptrace ARGS`` (the package in ``pythonpath``, run from there, when
    given); wall seconds and peak tree PSS and RSS sum (GiB), sampled every ``interval`` s
    (None: not sampled, wall seconds only). Each sample reads smaps_rollup of every process of
    the tree, so a long run of many short child processes wants a longer interval: at 50 ms the
    sampler took a quarter of the 2 cores from a 1,000-trace campaign (179 s against 138 s
    unsampled), and 0.6 s of the 6 s of a paper-scale trace."""
    peak = [0, 0]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ksptrace", *args], env=env, cwd=pythonpath,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sample() -> None:
        while proc.poll() is None:
            pss, rss = _tree_memory(proc.pid)
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)
            time.sleep(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    if interval is not None:
        sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    if interval is not None:
        sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"ksptrace {' '.join(args)} failed ({proc.returncode}): {err.strip()}")
    if interval is None:
        return {"seconds": round(wall, 2)}
    return {"seconds": round(wall, 2), "peak_gib": round(peak[0] / 2**30, 3),
            "peak_rss_sum_gib": round(peak[1] / 2**30, 3)}


def naive_seconds(times: np.ndarray, pairs: int = 100, iterations: int = 100) -> float:
    """The naive route on a subset, extrapolated to the whole trace (see the docstring)."""
    from ksptrace.studies.variability.stats import models

    t0 = time.perf_counter()
    for q in range(1, pairs + 1):
        st.ks_2samp(times[0], times[q])
    per_pair = (time.perf_counter() - t0) / pairs
    lo, hi = times.min(axis=0), times.max(axis=0)
    t0 = time.perf_counter()
    for a, b in zip(lo[:iterations], hi[:iterations], strict=True):
        models.expected_max_direct(st.uniform(a, b - a), float(times.shape[0] // 64), a, b)
    per_iteration = (time.perf_counter() - t0) / iterations
    return per_pair * (times.shape[0] - 1) + per_iteration * times.shape[1]


def loadavg() -> float:
    return round(os.getloadavg()[0], 2)


def append_entry(out: Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` to the JSON list of runs in ``out`` (made if missing) and say so."""
    runs = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps([*runs, entry], indent=1) + "\n")
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=8192)
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--big-iterations", type=int, default=20000)
    parser.add_argument("--traces", type=int, default=24, help="traces in the campaign case")
    parser.add_argument("--campaign-nprocs", type=int, default=2048)
    parser.add_argument("--paper-traces", type=int, default=60,
                        help="traces of NPROCS x ITERATIONS in the paper_campaign case")
    parser.add_argument("--only", choices=CASES, action="append",
                        help="run only this case (repeatable); the others keep their figures")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the trace files go (default: a new folder in $TMPDIR)")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    cases_run = tuple(args.only or CASES[:3])
    result: dict[str, Any] = {}
    if args.only and args.out.exists():
        result = json.loads(args.out.read_text())
    result.update({"targets": TARGETS, "load_avg_1min_start": loadavg(),
                   "cases_run": list(cases_run)})
    work = Path(tempfile.mkdtemp(prefix="ksptrace-bench-", dir=args.workdir))
    try:
        for name, k in (("one_trace", args.iterations), ("big_trace", args.big_iterations)):
            if name not in cases_run:
                continue
            trace = synthetic_trace(args.nprocs, k, 64, "gmres", seed=0)
            path = work / f"{name}.h5"
            write_trace(trace, path)
            naive = naive_seconds(trace.iteration_seconds)
            del trace
            cli = run_cli(["analyze", str(path), "--out", str(work / f"{name}-report"),
                           "--no-cache", "--quiet"])
            result[name] = {"nprocs": args.nprocs, "iterations": k,
                            "file_gib": round(path.stat().st_size / 2**30, 3), **cli,
                            "naive_route_seconds": round(naive, 1),
                            "speedup_vs_naive": round(naive / cli["seconds"], 1),
                            "load_avg_1min_after": loadavg()}
            print(name, result[name], flush=True)
            path.unlink()
        if "paper_campaign" in cases_run:
            result["paper_campaign"] = paper_campaign(work, args)
        if "campaign" not in cases_run:
            return finish(result, args.out)
        folder = work / "campaign"
        folder.mkdir()
        for i in range(args.traces):
            write_trace(synthetic_trace(args.campaign_nprocs, args.iterations, 64,
                                        ("gmres", "pgmres", "bcgs", "pipebcgs")[i % 4], seed=i),
                        folder / f"t{i:03d}.h5")
        paths = [str(p) for p in sorted(folder.glob("*.h5"))]
        cases: dict[str, Any] = {}
        for label, extra in (("jobs1", ["--jobs", "1", "--no-cache"]),
                             ("jobs2", ["--jobs", "2", "--no-cache"]),
                             ("cold_with_cache", ["--jobs", "2", "--cache",
                                                  str(work / "cache")]),
                             ("rerun_all_cached", ["--jobs", "2", "--cache",
                                                   str(work / "cache")])):
            cases[label] = {**run_cli(["analyze", *paths, "--out", str(work / f"r-{label}"),
                                       "--quiet", *extra]), "load_avg_1min_after": loadavg()}
            print(label, cases[label], flush=True)
        cases["traces"] = args.traces
        cases["nprocs"] = args.campaign_nprocs
        cases["iterations"] = args.iterations
        cases["jobs2_speedup"] = round(cases["jobs1"]["seconds"] / cases["jobs2"]["seconds"], 2)
        cases["rerun_speedup"] = round(
            cases["cold_with_cache"]["seconds"] / cases["rerun_all_cached"]["seconds"], 1)
        same = all((work / "r-jobs1" / n).read_text() == (work / "r-jobs2" / n).read_text()
                   for n in os.listdir(work / "r-jobs1") if n.endswith(".csv"))
        cases["jobs2_csv_identical"] = same
        result["campaign"] = cases
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish(result, args.out)


def paper_campaign(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``analyze --jobs 2`` on PAPER_TRACES distinct traces of NPROCS x ITERATIONS."""
    folder = work / "paper"
    folder.mkdir()
    start = time.perf_counter()
    for i in range(args.paper_traces):
        write_trace(synthetic_trace(args.nprocs, args.iterations, 64,
                                    ("gmres", "pgmres", "bcgs", "pipebcgs")[i % 4], seed=100 + i),
                    folder / f"p{i:03d}.h5")
    written = time.perf_counter() - start
    paths = sorted(folder.glob("*.h5"))
    files_gib = sum(p.stat().st_size for p in paths) / 2**30
    load_before = loadavg()
    cli = run_cli(["analyze", *map(str, paths), "--out", str(work / "r-paper"), "--quiet",
                   "--jobs", "2", "--no-cache"])
    report = (work / "r-paper" / "report.html").read_text()
    out = {"traces": args.paper_traces, "nprocs": args.nprocs, "iterations": args.iterations,
           "files_gib": round(files_gib, 1), "write_seconds": round(written, 1), "jobs": 2,
           **cli, "load_avg_1min_before": load_before, "load_avg_1min_after": loadavg(),
           "report_mentions_every_trace": all(p.name in report for p in paths)}
    print("paper_campaign", out, flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def finish(result: dict[str, Any], out: Path) -> int:
    """Check the targets on whatever figures ``result`` holds, write it to ``out``."""
    result["load_avg_1min_end"] = loadavg()
    met: dict[str, bool] = {}
    if "one_trace" in result:
        met["one_trace_seconds"] = result["one_trace"]["seconds"] <= TARGETS["one_trace_seconds"]
    if "big_trace" in result:
        met["big_trace_seconds"] = result["big_trace"]["seconds"] <= TARGETS["big_trace_seconds"]
        met["big_trace_gib"] = result["big_trace"]["peak_gib"] <= TARGETS["big_trace_gib"]
    if "campaign" in result:
        met["campaign_gib"] = max(result["campaign"][c]["peak_gib"]
                                  for c in ("jobs1", "jobs2")) <= TARGETS["campaign_gib"]
        met["jobs2_speedup"] = result["campaign"]["jobs2_speedup"] >= TARGETS["jobs2_speedup"]
    if "paper_campaign" in result:
        met["paper_campaign_gib"] = (result["paper_campaign"]["peak_gib"]
                                     <= TARGETS["paper_campaign_gib"])
    result["meets_targets"] = met
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "numpy": np.__version__}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(met))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
