"""PLogP run to run: do two runs agree within 10 % per size, and is the 4 KiB step found?

Given N PLogP traces of the same two ranks (``ksptrace collectives --np 2 --op plogp``), this
reports, per function (o_s, o_r, g, RTT/2) and message size, the largest relative difference
between the robust medians of consecutive runs (1 vs 2, 3 vs 4, ...; target <= 10 % from 1 B to
1 MiB), and in how many runs the step fit of each of o_s, o_r and g puts a break at 4 KiB (the
eager limit of Open MPI's shared-memory transport; target >= 9 of 10), or within one size of it.

    python bench/plogp_steps.py [TRACE.h5 ...] [--runs 10] [--repetitions R] [--out FILE]

Without traces it first records ``--runs`` of them (``ksptrace collectives --np 2 --op plogp``
with the CLI's defaults: 1 B-1 MiB, 20 rounds, 3 warm-up rounds; one after the other, into a
temporary folder that it removes), and the wall time of each. The trace keeps the 1-minute
load average at its start (``loadavg_before``): the machine's state is part of the result.
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


def record(folder: Path, i: int, repetitions: int | None) -> tuple[Path, float]:
    """One run with the CLI's defaults (1 B-1 MiB, its repetitions and warm-up unless
    ``repetitions`` is given), and its wall time in seconds (MPI start-up included)."""
    out = folder / f"run{i + 1}.h5"
    reps = [] if repetitions is None else ["--repetitions", str(repetitions)]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ksptrace", "collectives", "--np", "2", "--op", "plogp",
                    *reps, "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=None,
                        help="rounds per run (default: ksptrace collectives' own)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    runs: list[tuple[Path, float]] = []
    folder = None if args.traces else Path(tempfile.mkdtemp(prefix="ksptrace-plogp-"))
    try:
        runs = [record(folder, i, args.repetitions) for i in range(args.runs) if folder]
        paths = [Path(p) for p in args.traces] or [p for p, _ in runs]
        traces = [ctrace.read(p) for p in paths]
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
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
    breaks = []
    for t in traces:
        model = model_of(t)
        fits = {"o_s": model.send_overhead, "o_r": model.recv_overhead, "g": model.gap}
        breaks.append({k: list(f.breakpoints) for k, f in fits.items()})
        for k, f in fits.items():
            found[k]["exact"] += EAGER in f.breakpoints
            found[k]["within_one_size"] += any(EAGER // 2 <= b <= 2 * EAGER
                                               for b in f.breakpoints)
    all_three = sum(all(EAGER in b[k] for k in PARTS) for b in breaks)
    result = {"benchmark": "plogp_steps", "runs": len(traces), "pairs": len(traces) // 2,
              "repetitions": int(traces[0].repetitions),
              "mpi_library": str(traces[0].attrs.get("mpi_library", "")),
              "loadavg_before_each_run": [float(t.attrs.get("loadavg_before", np.nan))
                                          for t in traces],
              "loadavg_now": list(os.getloadavg()),
              "wall_seconds_each_run": [round(w, 2) for _, w in runs],
              "median_rel_error_per_function": {
                  k: float(np.median(v)) for k, v in rel_errors(traces).items()},
              "agreement": agreement, "step_at_4KiB": found,
              "step_at_4KiB_in_all_three": all_three, "breakpoints": breaks}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(traces)} runs, {len(traces) // 2} pairs; sizes within 10 % in every pair "
          f"(of {sizes.size}):")
    for name, a in agreement.items():
        worst = max(a["worst_per_size"].values())
        print(f"  {name:>5}: {a['sizes_within_10pc_in_every_pair']:>2}, median difference "
              f"{a['median_pair_difference']:.1%}, worst {worst:.0%}")
    print("4 KiB step found (exact / within one size): " + ", ".join(
        f"{k} {v['exact']}/{v['within_one_size']}" for k, v in found.items())
        + f"; in all three: {all_three} of {len(traces)}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
