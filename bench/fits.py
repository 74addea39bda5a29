"""Issue 51's targets for the fitting engine: correctness against a strong search, and speed.

Cases (``--only`` picks some):

* ``correctness``: on ``--traces`` varied synthetic traces (``ksptrace.studies.fits.samples``:
  six KSP types, two problems, P 1-4, K 200-5000; seeded, so anyone can rerun it without
  PETSc), every default family (and nct with ``--nct``) is fitted by the engine and
  by the multi-start strong search on the same objective (``ksptrace.studies.fits.verify``).
  Per family: how many fits are ok / boundary / not converged / degenerate, and the most nats
  an ok fit (and any fit) lost against the strong search. Targets: every ok fit within 0.01
  nats, at least 90 % of all fits ok.
  With ``--trace-dir``, on every trace of a real campaign instead: bench/fits_real/*.toml run
  with ``ksptrace campaign run FILE --backend local`` (20 forced-K solves, six KSP types, both
  problems, P 1-4, K 200-5000), then ``--trace-dir bench/fits_real/runs``.
* ``engine``: the CPU time (process time) of the engine's fits of every default family on the
  same traces, in this process, per family and per trace (the budget: 40 ms a trace).
* ``speed``: ``ksptrace analyze --no-figures --jobs 1`` on the same traces (or, with
  ``--trace-dir``, on the real campaign's) against the package
  at ``--baseline``, ``--pairs`` interleaved pairs, wall and CPU (user + sys of the child)
  seconds. Target: 0.1 s per trace.
* ``campaign``: 1,000 varied traces with ``--jobs 2``, no figures. Target: 60 s.
* ``paper``: one 8192 x 5000 trace against the read-and-sort floor measured in the same run
  (bench/analysis_throughput.py's case). Target: 2x the floor.

    python bench/fits.py [--only correctness] [--traces 24] [--nct] [--baseline COMMIT]

Appends an entry to bench/results/fits.json with the machine load before and after each case,
the commit and the stack (python, numpy, scipy) it ran on. On the PyPI stack:
``PYTHONPATH=$PWD $(bash scripts/stack_pypi.sh) bench/fits.py --only speed``.
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

import numpy as np
from analysis_campaign import append_entry, loadavg
from analysis_throughput import paper as paper_case
from analysis_throughput import run

from ksptrace.studies.fits import binned, equal_count_cells, family, fit_family
from ksptrace.studies.fits.samples import varied_trace
from ksptrace.studies.fits.verify import strong_search
from ksptrace.studies.variability.stats.choices import DEFAULT_CANDIDATES
from ksptrace.trace.read import read_trace
from ksptrace.trace.write import write_trace

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "fits.json"
TARGETS = {"ok_nats_lost_max": 0.01, "ok_fraction_min": 0.9, "seconds_per_trace": 0.1,
           "engine_cpu_ms_per_trace": 40.0,
           "campaign_1000_seconds": 60.0, "paper_over_floor": 2.0}
CASES = ("correctness", "engine", "speed", "campaign", "paper")


def _theta(name: str, data: Any, params: tuple[float, ...]) -> np.ndarray:
    z = np.array([*params[:-2], (params[-2] - data.centre) / data.spread,
                  params[-1] / data.spread])
    return family(name).theta(z, data.anchor)


def _samples(count: int, trace_dir: Path | None) -> list[tuple[str, np.ndarray]]:
    """(name, sorted iteration times) of the varied synthetic traces, or of every trace file
    under ``trace_dir`` (a real campaign's)."""
    if trace_dir is None:
        return [(v.name, np.sort(v.trace.iteration_seconds.ravel()))
                for v in map(varied_trace, range(count))]
    out = []
    for path in sorted(trace_dir.rglob("*.h5")):
        t = read_trace(path)
        name = "-".join(str(t.attr(k, "?")) for k in ("problem", "ksp", "nprocs", "iterations"))
        out.append((f"{name}-{path.stem}", np.sort(t.iteration_seconds.ravel())))
    return out


def correctness(count: int, with_nct: bool, trace_dir: Path | None = None) -> dict[str, Any]:
    names = (*DEFAULT_CANDIDATES, *(("nct",) if with_nct else ()))
    table: dict[str, dict[str, Any]] = {
        n: {"ok": 0, "boundary": 0, "not converged": 0, "degenerate": 0, "ok_lost_max": 0.0,
            "boundary_lost_max": 0.0, "at_represented_limit": 0, "any_lost_max": 0.0,
            "engine_seconds": 0.0} for n in names}
    traces = []
    for label, x in _samples(count, trace_dir):
        traces.append(label)
        data = binned(*equal_count_cells(x))
        for name in names:
            start = time.perf_counter()
            fit = fit_family(family(name), data)
            row = table[name]
            row["engine_seconds"] += time.perf_counter() - start
            strong = strong_search(family(name), data, _theta(name, data, fit.params))
            lost = fit.objective - strong.objective
            row[fit.status] += 1
            row["any_lost_max"] = max(row["any_lost_max"], lost)
            if fit.status == "ok":
                row["ok_lost_max"] = max(row["ok_lost_max"], lost)
            if fit.status == "boundary":
                row["boundary_lost_max"] = max(row["boundary_lost_max"], lost)
                row["at_represented_limit"] += bool(fit.limit)
            print(label, name, fit.status, fit.limit, f"lost {lost:.3g} nats", flush=True)
    fits = sum(r["ok"] + r["boundary"] + r["not converged"] + r["degenerate"]
               for r in table.values())
    ok = sum(r["ok"] for r in table.values())
    limit = sum(r["at_represented_limit"] for r in table.values())
    return {"traces": traces, "families": table, "fits": fits, "ok": ok,
            "ok_fraction": round(ok / fits, 4),
            "ok_or_represented_limit_fraction": round((ok + limit) / fits, 4),
            "ok_nats_lost_max": max(r["ok_lost_max"] for r in table.values()),
            "boundary_nats_lost_max": max(r["boundary_lost_max"] for r in table.values())}


def engine(count: int) -> dict[str, Any]:
    cells = [binned(*equal_count_cells(np.sort(varied_trace(i).trace.iteration_seconds.ravel())))
             for i in range(count)]
    fit_family(family("norm"), cells[0])  # warm-up: imports and first calls
    per = dict.fromkeys(DEFAULT_CANDIDATES, 0.0)
    start = time.process_time()
    for data in cells:
        for name in DEFAULT_CANDIDATES:
            began = time.process_time()
            fit_family(family(name), data)
            per[name] += time.process_time() - began
    total = time.process_time() - start
    out = {"traces": count, "cpu_ms_per_trace": round(1e3 * total / count, 1),
           "cpu_ms_per_fit": {k: round(1e3 * v / count, 2) for k, v in per.items()}}
    print("engine", out, flush=True)
    return out


def _cpu_run(args: list[str], where: Path | None) -> dict[str, float]:
    """``python -m ksptrace ARGS`` from ``where`` (this tree if None): wall seconds and the CPU
    seconds (user + sys) of the child and its children."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if where is not None:
        env["PYTHONPATH"] = str(where)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ksptrace", *args], env=env, cwd=where, check=True,
                   capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": round(wall, 3), "cpu": round(cpu, 3)}


def _write(folder: Path, count: int) -> list[str]:
    folder.mkdir()
    paths = []
    for i in range(count):
        v = varied_trace(i)
        path = folder / f"{v.name}.h5"
        write_trace(v.trace, path)
        paths.append(str(path))
    return paths


def speed(work: Path, base: Path, count: int, pairs: int, trace_dir: Path | None = None
          ) -> dict[str, Any]:
    paths = (_write(work / "speed", count) if trace_dir is None else
             [str(p) for p in sorted(trace_dir.rglob("*.h5"))])
    count = len(paths)
    runs: dict[str, list[dict[str, float]]] = {"now": [], "baseline": []}
    for i in range(pairs):  # interleaved, the order alternating
        order = (("now", None), ("baseline", base))
        for label, where in order if i % 2 == 0 else order[::-1]:
            runs[label].append(_cpu_run(
                ["analyze", *paths, "--out", str(work / f"r-{label}-{i}"), "--no-cache",
                 "--quiet", "--no-figures", "--jobs", "1"], where))
            print("speed", label, runs[label][-1], loadavg(), flush=True)
    out: dict[str, Any] = {"traces": count, "pairs": pairs, "runs": runs}
    for label, got in runs.items():
        for kind in ("wall", "cpu"):
            out[f"{label}_{kind}_seconds_per_trace_median"] = round(
                float(np.median([r[kind] for r in got])) / count, 4)
    return out


def campaign(work: Path) -> dict[str, Any]:
    paths = _write(work / "campaign", 1000)
    out = run(["analyze", *paths, "--out", str(work / "r-campaign"), "--no-cache", "--quiet",
               "--no-figures", "--jobs", "2"], memory=False)
    print("campaign", out, flush=True)
    return {"traces": 1000, "jobs": 2, **out}


def _head() -> str:
    """This tree's commit (with "+" if it has changes), the "now" of every case."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "ksptrace"], cwd=ROOT,
                           text=True, capture_output=True, check=False).stdout.strip()
    return head + ("+" if dirty else "")


def _stack() -> dict[str, str]:
    """The interpreter, numpy and scipy both packages ran on (the speed target holds on the
    Debian stack and on the PyPI one: scripts/stack_pypi.sh)."""
    import scipy

    return {"python": sys.version.split()[0], "executable": sys.executable,
            "numpy": np.__version__, "scipy": scipy.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=CASES, action="append")
    parser.add_argument("--traces", type=int, default=24)
    parser.add_argument("--nct", action="store_true", help="also nct (its cdf is slow)")
    parser.add_argument("--trace-dir", type=Path, help="correctness and speed on every trace file "
                        "under this folder (a real campaign's) instead of the varied synthetic "
                        "traces")
    parser.add_argument("--baseline", default="421b4c8",
                        help="the commit to compare speed with (421b4c8: the engine of issue 51 "
                             "before its speed work; 0ea5cdc: the scipy 1.10 emulation)")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved speed runs")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--note", default="", help="a line kept with the entry")
    args = parser.parse_args(argv)
    entry: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "targets": TARGETS,
                             "baseline": args.baseline, "load_avg_1min_start": loadavg(),
                             "commit": _head(), "stack": _stack(), **(
                                 {"note": args.note} if args.note else {})}
    work = Path(tempfile.mkdtemp(prefix="ksptrace-fits-"))
    base = work / "baseline"
    base.mkdir()
    archive = subprocess.run(["git", "archive", args.baseline, "ksptrace"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    for tree in (ROOT / "ksptrace", base / "ksptrace"):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
    try:
        for case in args.only or CASES:
            before = loadavg()
            if case == "correctness":
                entry[case] = correctness(args.traces, args.nct, args.trace_dir)
                if args.trace_dir is not None:
                    entry[case]["trace_dir"] = str(args.trace_dir)
            elif case == "engine":
                entry[case] = engine(args.traces)
            elif case == "speed":
                entry[case] = speed(work, base, args.traces, args.pairs, args.trace_dir)
                if args.trace_dir is not None:
                    entry[case]["trace_dir"] = str(args.trace_dir)
            elif case == "campaign":
                entry[case] = campaign(work)
            else:
                result = paper_case(work, base)
                floor = result["read_and_sort_floor_seconds"]
                result["over_floor"] = round(result["now"]["seconds"] / floor, 2)
                entry[case] = result
            entry[case]["load_avg_1min_before"] = before
            entry[case]["load_avg_1min_after"] = loadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    append_entry(args.out, entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
