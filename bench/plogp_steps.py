"""PLogP run to run: do two runs agree within 10 % per size, and is the 4 KiB step found?

Given N PLogP traces of the same two ranks (``ksptrace collectives --np 2 --op plogp``), this
reports, per function (o_s, o_r, g, RTT/2) and message size, the largest relative difference
between the robust medians of consecutive runs (1 vs 2, 3 vs 4, ...; target <= 10 % from 1 B to
1 MiB), and in how many runs each of o_s, o_r and g steps at 4 KiB (the first size above the
eager limit of Open MPI's shared-memory transport; target >= 9 of 10), or within a factor of 2:
the fit's breaks are shared by the functions (``shared_steps.py``), and a function steps at one
when its jump's 95 % interval there excludes 0.

    python bench/plogp_steps.py [TRACE.h5 ...] [--runs 10] [--timing c python]
                                [--repetitions R] [--core-latency] [--out FILE]

Without traces it first records ``--runs`` of them (``ksptrace collectives --np 2 --op plogp``
with the CLI's defaults: 1 B-1 MiB at 4 sizes per doubling, 20 rounds, 3 warm-up rounds; one
after the other, into a temporary folder that it removes), and the wall time of each. The trace
keeps the 1-minute load average at its start (``loadavg_before``): the machine's state is part
of the result. ``--timing`` names the paths that time the exchanges (``KSPTRACE_PLOGP_TIMING``:
``c``, the kernel, or ``python``, through mpi4py); given several, their runs alternate (c,
python, c, ...) so that both see the same load, and each path is compared within itself (its
runs 1 vs 2, 3 vs 4, ...). Traces given on the command line are grouped by the path their
``plogp_timing`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.studies.collectives.p2p_table import model_of
from ksptrace.studies.collectives.persize import robust_medians, rows, summarize
from ksptrace.trace import collectives as ctrace

RESULTS = Path(__file__).resolve().parent / "results" / "plogp_steps.json"
EAGER = 4096
PARTS = {"o_s": "send_overhead_seconds", "o_r": "recv_overhead_seconds", "g": "gap_seconds"}


def medians(t: ctrace.CollectiveTrace) -> dict[str, np.ndarray]:
    def pooled(v: np.ndarray) -> np.ndarray:
        return robust_medians(np.moveaxis(v, 0, 1).reshape(v.shape[1], -1))

    assert t.parts is not None
    out = {name: pooled(t.parts[key]) for name, key in PARTS.items()}
    out["rtt/2"] = pooled(t.seconds)
    return out


def rel_errors(traces: list[ctrace.CollectiveTrace]) -> dict[str, np.ndarray]:
    """Per function, every run's per-size relative standard errors of the median."""
    assert all(t.parts is not None for t in traces)
    return {name: np.array([summarize(rows(t.parts[key], t.message_bytes.size, key)).rel_error
                            for t in traces if t.parts is not None])
            for name, key in PARTS.items()}


def core_latency(folder: Path, seconds: float = 1.0) -> float:
    """The median over half seconds of a cache line's round trip between CPUs 0 and 1 (ns; no
    MPI: ``core_to_core.c``, built into ``folder`` once)."""
    binary = folder / "core_to_core"
    if not binary.exists():
        subprocess.run(["cc", "-O2", "-o", str(binary), str(Path(__file__).parent /
                                                           "core_to_core.c")], check=True)
    out = subprocess.run([str(binary), str(seconds)], check=True, capture_output=True,
                         text=True).stdout
    return float(np.median([float(x) for x in out.split()]))


def record(folder: Path, i: int, repetitions: int | None, timing: str) -> tuple[Path, float]:
    """One run with the CLI's defaults (1 B-1 MiB, its repetitions and warm-up unless
    ``repetitions`` is given) timed by ``timing``, and its wall time in seconds (MPI start-up
    included)."""
    out = folder / f"run{i + 1}-{timing}.h5"
    reps = [] if repetitions is None else ["--repetitions", str(repetitions)]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ksptrace", "collectives", "--np", "2", "--op", "plogp",
                    *reps, "--out", str(out)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "KSPTRACE_PLOGP_TIMING": timing})
    return out, time.perf_counter() - start


def analyse(traces: list[ctrace.CollectiveTrace], walls: list[float]) -> dict[str, Any]:
    """Run-to-run agreement per function and size, and the 4 KiB breaks, of these runs."""
    sizes = traces[0].message_bytes
    meds = [medians(t) for t in traces]
    agreement: dict[str, dict[str, Any]] = {}
    for name in meds[0]:
        diffs = np.array([np.abs(a[name] / b[name] - 1) for a, b in zip(meds[::2], meds[1::2],
                                                                         strict=False)])
        worst = diffs.max(axis=0)
        agreement[name] = {"worst_per_size": dict(zip(map(int, sizes), map(float, worst),
                                                      strict=True)),
                           "sizes_within_10pc_in_every_pair": int((worst <= 0.10).sum()),
                           "difference_per_pair": [[round(float(x), 4) for x in row]
                                                   for row in diffs],
                           "sizes_within_10pc_per_pair": [int(x) for x in
                                                          (diffs <= 0.10).sum(axis=1)],
                           "pairs_all_sizes_within_10pc": int((diffs.max(axis=1) <= 0.10)
                                                              .sum()),
                           "median_pair_difference": float(np.median(diffs))}
    found = {name: {"exact": 0, "within_one_size": 0} for name in PARTS}
    breaks, jumps = [], []
    for t in traces:
        model = model_of(t)
        fits = {"o_s": model.send_overhead, "o_r": model.recv_overhead, "g": model.gap}
        stepping = {k: [b for b, s in zip(f.breakpoints, f.stepped(), strict=True) if s]
                    for k, f in fits.items()}
        breaks.append(stepping)
        jumps.append({k: {str(b): [round(j, 4), round(lo, 4), round(hi, 4)] for b, j, lo, hi in
                          zip(f.breakpoints, f.jumps(), f.jump_low, f.jump_high, strict=True)}
                      for k, f in fits.items()})
        for k in fits:
            found[k]["exact"] += EAGER in stepping[k]
            found[k]["within_one_size"] += any(EAGER // 2 <= b <= 2 * EAGER
                                               for b in stepping[k])
    all_three = sum(all(EAGER in b[k] for k in PARTS) for b in breaks)
    return {"runs": len(traces), "pairs": len(traces) // 2,
            "timing": sorted({str(t.attrs.get("plogp_timing", "python")) for t in traces}),
            "repetitions": int(traces[0].repetitions),
            "loadavg_before_each_run": [float(t.attrs.get("loadavg_before", np.nan))
                                        for t in traces],
            "wall_seconds_each_run": [round(w, 2) for w in walls],
            "median_rel_error_per_function": {
                k: float(np.median(v)) for k, v in rel_errors(traces).items()},
            "agreement": agreement, "step_at_4KiB": found,
            "step_at_4KiB_in_all_three": all_three, "stepping_breakpoints": breaks,
            "jumps_with_95pc_intervals": jumps,
            "sizes": [int(m) for m in sizes]}


def small_sizes_and_latency(traces: list[ctrace.CollectiveTrace], latency: list[list[float]]
                            ) -> dict[str, Any]:
    """Per run, the core-to-core round trip before and after it and the median over sizes up to
    256 B of each function (us), and each function's correlation with the latency."""
    small = [{k: float(np.median(v[t.message_bytes <= 256])) * 1e6
              for k, v in medians(t).items()} for t in traces]
    mean = np.array([np.mean(x) for x in latency])
    return {"ns_before_after_each_run": latency, "small_size_us_each_run": small,
            "pearson_with_latency": {k: float(np.corrcoef(mean, [r[k] for r in small])[0, 1])
                                     for k in small[0]}}


def show(label: str, r: dict[str, Any], sizes: int) -> None:
    load = r["loadavg_before_each_run"]
    print(f"{label}: {r['runs']} runs, {r['pairs']} pairs, load {min(load):.1f}-{max(load):.1f};"
          f" sizes within 10 % in every pair (of {sizes}):")
    for name, a in r["agreement"].items():
        worst = max(a["worst_per_size"].values())
        print(f"  {name:>5}: {a['sizes_within_10pc_in_every_pair']:>2}, median difference "
              f"{a['median_pair_difference']:.1%}, worst {worst:.0%}")
    print("  4 KiB step found (exact / within one size): " + ", ".join(
        f"{k} {v['exact']}/{v['within_one_size']}" for k, v in r["step_at_4KiB"].items())
        + f"; in all three: {r['step_at_4KiB_in_all_three']} of {r['runs']}")
    if "core_to_core" in r:
        c = r["core_to_core"]
        print("  core to core (ns, before/after each run): " + ", ".join(
            f"{a:.0f}/{b:.0f}" for a, b in c["ns_before_after_each_run"]))
        print("  correlation of each run's median up to 256 B with it: " + ", ".join(
            f"{k} {v:+.2f}" for k, v in c["pearson_with_latency"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--timing", nargs="+", choices=("c", "python"), default=["c"],
                        help="the paths that time the exchanges; runs alternate between them")
    parser.add_argument("--repetitions", type=int, default=None,
                        help="rounds per run (default: ksptrace collectives' own)")
    parser.add_argument("--core-latency", action="store_true",
                        help="time a cache line's round trip between CPUs 0 and 1 (no MPI, "
                             "core_to_core.c) for 1 s before and after each run")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    runs: list[tuple[Path, float]] = []
    latency: list[list[float]] = []
    folder = None if args.traces else Path(tempfile.mkdtemp(prefix="ksptrace-plogp-"))
    try:
        if folder is not None:
            for i in range(args.runs):
                for timing in args.timing:
                    before = core_latency(folder) if args.core_latency else None
                    runs.append(record(folder, i, args.repetitions, timing))
                    if before is not None:
                        latency.append([before, core_latency(folder)])
        paths = [Path(p) for p in args.traces] or [p for p, _ in runs]
        traces = [ctrace.read(p) for p in paths]
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    walls = [w for _, w in runs] or [float("nan")] * len(traces)
    by_timing: dict[str, Any] = {}
    for timing in dict.fromkeys(str(t.attrs.get("plogp_timing", "python")) for t in traces):
        mine = [i for i, t in enumerate(traces)
                if str(t.attrs.get("plogp_timing", "python")) == timing]
        by_timing[timing] = analyse([traces[i] for i in mine], [walls[i] for i in mine])
        if latency:
            by_timing[timing]["core_to_core"] = small_sizes_and_latency(
                [traces[i] for i in mine], [latency[i] for i in mine])
    result = {"benchmark": "plogp_steps", "runs": len(traces),
              "order": [str(t.attrs.get("plogp_timing", "python")) for t in traces],
              "mpi_library": str(traces[0].attrs.get("mpi_library", "")),
              "ompi_mca_env": {k: v for k, v in os.environ.items() if k.startswith("OMPI_MCA_")},
              "loadavg_now": list(os.getloadavg()), "by_timing": by_timing}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for timing, r in by_timing.items():
        show(f"timed in {timing}", r, traces[0].message_bytes.size)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
