"""Issue 51's speed targets for the parts of ``ksptrace analyze`` outside the fitting engine.

The engine (``ksptrace.studies.fits``) is sped up on its own; this measures everything else, as
CPU time (user + sys of the process tree, from ``getrusage``), since the machine it runs on is
shared: wall time there says more about the neighbours than about the code.

* ``speed``: ``analyze --no-figures --jobs 1 --no-cache`` of ``--traces`` varied synthetic
  traces (bench/fits.py's), in ``--pairs`` interleaved pairs against the package at
  ``--baseline`` (unpacked with ``git archive``, byte-compiled like this one). Each run is
  timed twice: as is, and with the engine's ``fit_family`` answered from a memo of its results
  on the same traces (filled by a first run of each package), so that the second figure is
  the CPU outside the engine. Target: 0.1 s per trace in all once the engine takes ~5 ms a fit.
* ``campaign``: ``--campaign`` varied traces (default 1,000): as is with one job (which fills
  the engine's memo), outside the engine with ``--jobs 2`` now and at the baseline, and as is
  with ``--jobs 2``. CPU and wall. Target: 60 s wall for 1,000 with ``--jobs 2``.
* ``paper``: one 8192 x 5000 trace (``--paper PATH``, or written here) beside the read-and-sort
  floor (bench/analysis_throughput.py's), CPU and wall, now and at the baseline, no figures.
  Target: 2x the floor.

    python bench/pipeline_speed.py [--only speed] [--pairs 3] [--baseline 421b4c8]

Appends an entry to bench/results/pipeline_speed.json, with the 1-minute load average before
and after each case.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from analysis_campaign import append_entry, loadavg
from analysis_throughput import FLOOR
from fits import _write

from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "pipeline_speed.json"
CASES = ("speed", "campaign", "paper")
MEMO = '''
import atexit, hashlib, os, pickle, runpy, sys
import ksptrace.studies.variability.stats.fitting as fitting
path, replay = os.environ["MEMO"], os.environ.get("MEMO_REPLAY") == "1"
store = pickle.load(open(path, "rb")) if replay else {}
real = fitting.fit_family
def memo(fam, data, seed=0):
    key = hashlib.sha1(pickle.dumps((fam.name, data.edges.tobytes(), data.counts.tobytes(),
                                     data.centre, data.spread, seed))).hexdigest()
    if key not in store:
        store[key] = real(fam, data, seed)
    return store[key]
fitting.fit_family = memo
if not replay:  # the command leaves by os._exit after the atexit functions (cli/leave.py)
    atexit.register(lambda: pickle.dump(store, open(path, "wb")))
sys.argv = ["ksptrace", *sys.argv[1:]]
runpy.run_module("ksptrace", run_name="__main__")
'''


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args: list[str], package: Path | None, memo: Path | None = None,
          replay: bool = False) -> dict[str, float]:
    """CPU (user + sys of the whole tree) and wall seconds of ``python -m ksptrace ARGS``, the
    package from ``package`` when given, with the engine memoised in ``memo`` when given."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if package is not None:
        env["PYTHONPATH"] = str(package)
    cmd = [sys.executable, "-m", "ksptrace", *args]
    if memo is not None:
        env.update(MEMO=str(memo), MEMO_REPLAY="1" if replay else "0")
        cmd = [sys.executable, "-c", MEMO, *args]
    cpu, wall = _cpu_children(), time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=package, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall, _cpu_children() - cpu
    if done.returncode != 0:
        raise SystemExit(f"ksptrace {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return {"cpu": round(cpu, 3), "wall": round(wall, 3), "load": loadavg()}


def _packages(work: Path, baseline: str) -> dict[str, Path | None]:
    base = work / "baseline"
    base.mkdir()
    archive = subprocess.run(["git", "archive", baseline, "ksptrace"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    for tree in (ROOT / "ksptrace", base / "ksptrace"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True,
                       capture_output=True)
    return {"now": None, "baseline": base}


def speed(work: Path, packages: dict[str, Path | None], count: int, pairs: int
          ) -> dict[str, Any]:
    paths = _write(work / "speed", count)
    args = ["analyze", *paths, "--out", str(work / "r"), "--no-cache", "--quiet",
            "--no-figures", "--jobs", "1"]
    memos = {label: work / f"memo-{label}.pkl" for label in packages}
    for label, package in packages.items():  # fill each package's memo (not timed)
        timed(args, package, memos[label])
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(pairs):
        for label, package in packages.items():
            for kind, memo in (("outside_engine", memos[label]), ("all", None)):
                run = timed(args, package, memo, replay=True)
                runs.setdefault(f"{label}_{kind}", []).append(run)
                print("speed", label, kind, run, flush=True)
    out: dict[str, Any] = {"traces": count, "pairs": pairs, "runs": runs}
    for key, values in runs.items():
        out[f"{key}_cpu_per_trace_median"] = round(
            statistics.median(v["cpu"] for v in values) / count, 4)
    return out


def campaign(work: Path, packages: dict[str, Path | None], count: int) -> dict[str, Any]:
    """The engine's memo is filled by a run with one job (forked workers leave by os._exit,
    so theirs would be lost); both packages fit the same cells, so it serves both."""
    paths = _write(work / "campaign", count)
    memo = work / "memo-campaign.pkl"

    def args(label: str, jobs: int) -> list[str]:
        return ["analyze", *paths, "--out", str(work / f"rc-{label}-{jobs}"), "--no-cache",
                "--quiet", "--no-figures", "--jobs", str(jobs)]

    out: dict[str, Any] = {"traces": count}
    out["now_all_jobs1"] = timed(args("now", 1), packages["now"], memo)
    print("campaign now all jobs 1", out["now_all_jobs1"], flush=True)
    for label, package in packages.items():
        out[f"{label}_outside_engine_jobs2"] = timed(args(label, 2), package, memo, replay=True)
        print("campaign", label, "outside engine jobs 2", out[f"{label}_outside_engine_jobs2"],
              flush=True)
    out["now_all_jobs2"] = timed(args("now", 2), packages["now"])
    print("campaign now all jobs 2", out["now_all_jobs2"], flush=True)
    return out


def paper(work: Path, packages: dict[str, Path | None], path: Path | None) -> dict[str, Any]:
    if path is None:
        path = work / "paper.h5"
        write_trace(synthetic_trace(8192, 5000, 64, "gmres", seed=0), path)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out: dict[str, Any] = {"nprocs": 8192, "iterations": 5000}
    floor_cpu = FLOOR.replace("time.perf_counter()", "time.process_time()")
    for label, package in packages.items():
        floor = float(subprocess.run([sys.executable, "-c", floor_cpu, str(path)], env=env,
                                     text=True, capture_output=True, check=True).stdout)
        out[f"floor_cpu_before_{label}"] = round(floor, 3)
        out[label] = timed(["analyze", str(path), "--out", str(work / f"rp-{label}"),
                            "--no-cache", "--quiet", "--no-figures"], package)
        out[f"{label}_cpu_over_floor"] = round(out[label]["cpu"] / floor, 2)
        print("paper", label, floor, out[label], flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=CASES, action="append")
    parser.add_argument("--traces", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--campaign", type=int, default=1000)
    parser.add_argument("--paper", type=Path, help="an 8192 x 5000 trace written already")
    parser.add_argument("--baseline", default="421b4c8")
    parser.add_argument("--now", type=Path, help="a package folder to time as now (default: "
                        "this tree's)")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    entry: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "baseline": args.baseline,
                             "measure": "CPU seconds (user + sys of the process tree)"}
    work = Path(tempfile.mkdtemp(prefix="ksptrace-pipeline-"))
    try:
        packages = _packages(work, args.baseline)
        if args.now is not None:
            packages["now"] = args.now
        for case in args.only or CASES:
            before = loadavg()
            entry[case] = (speed(work, packages, args.traces, args.pairs) if case == "speed"
                           else campaign(work, packages, args.campaign) if case == "campaign"
                           else paper(work, packages, args.paper))
            entry[case]["load_avg_1min_before"] = before
            entry[case]["load_avg_1min_after"] = loadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    append_entry(args.out, entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
