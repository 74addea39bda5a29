"""Issue 61's targets on traces shaped like real ones: the fitting engine on heavy tails.

The traces are ``ksptrace.studies.fits.real_shapes``: drawn from profiles calibrated on the
project's own real campaign traces (bench/fits_real/*.toml, ``bench/fits_calibrate.py``): a
bulk with a gamma shape mostly below one, detours 10 to 1,000 medians long, whole-nanosecond
ticks with float noise. Beside them, the same number of the varied synthetic traces
(``ksptrace.studies.fits.samples``, shaped like the demo's), measured in the same run.

Cases (``--only`` picks some):

* ``engine``: in this process, the CPU time of every default family's fit per trace on each
  set, the evaluations, the statuses (ok, and ok or at a limit that another family of the set
  represents), and the share of Newton runs that fell back to L-BFGS-B (the polish of a boundary
  fit along its bound, deliberate, is counted apart). Targets: real-shaped at
  most 1.5x the varied set's CPU, L-BFGS-B in at most 5 % of searches, at least 90 % ok.
* ``speed``: ``ksptrace analyze --no-figures --jobs 1`` on each set, ``--pairs`` interleaved
  pairs (the order alternating), CPU (user + sys) and wall seconds per trace. Targets: at most
  0.1 s a trace, real-shaped at most 1.5x the varied set's CPU.
* ``strong``: every default family's fit against the strong multi-start search
  (``ksptrace.studies.fits.verify``) on the real-shaped set: the most an ok or boundary fit
  lost (the engine's guarantee: 0.01 nats). Minutes.

    python bench/fits_real_shaped.py [--only engine] [--traces 20] [--pairs 5]

Appends an entry to bench/results/fits_real_shaped.json with the load before and after each
case, the commit and the stack.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from analysis_campaign import append_entry, loadavg
from fits import _cpu_run, _head, _stack, _theta

from ksptrace.studies.fits import GUARANTEE_NATS, binned, engine, equal_count_cells, family
from ksptrace.studies.fits import search as search_module
from ksptrace.studies.fits.real_shapes import real_shaped_trace
from ksptrace.studies.fits.samples import Varied, varied_trace
from ksptrace.studies.fits.verify import strong_search
from ksptrace.studies.variability.stats.choices import DEFAULT_CANDIDATES
from ksptrace.trace.write import write_trace

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "fits_real_shaped.json"
TARGETS = {"cpu_ratio_max": 1.5, "seconds_per_trace": 0.1, "lbfgs_fraction_max": 0.05,
           "ok_fraction_min": 0.9, "nats_lost_max": GUARANTEE_NATS}
SETS: dict[str, Callable[[int], Varied]] = {"real_shaped": real_shaped_trace,
                                            "varied": varied_trace}
CASES = ("engine", "speed", "strong")


class _Counted:
    """Counts, in process, the engine's Newton runs, the L-BFGS-B fallbacks of its searches
    (where Newton ran out of budget) and its L-BFGS-B polishes of boundary fits along their
    bound (engine._along_bounds: deliberate, not a fallback)."""

    def __init__(self) -> None:
        self.newton = self.fallbacks = self.polishes = 0
        self._newton, self._minimize = search_module.newton, search_module.minimize

    def __enter__(self) -> _Counted:
        def newton(*args: Any) -> Any:
            self.newton += 1
            return self._newton(*args)

        def fallback(*args: Any, **kwargs: Any) -> Any:
            self.fallbacks += 1
            return self._minimize(*args, **kwargs)

        def polish(*args: Any, **kwargs: Any) -> Any:
            self.polishes += 1
            return self._minimize(*args, **kwargs)

        search_module.newton = engine.newton = newton  # type: ignore[assignment]
        search_module.minimize = fallback  # type: ignore[assignment]
        engine.minimize = polish  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        search_module.newton = engine.newton = self._newton  # type: ignore[assignment]
        search_module.minimize = engine.minimize = self._minimize  # type: ignore[assignment]


def _cells(make: Callable[[int], Varied], count: int) -> list[tuple[str, Any]]:
    out = []
    for i in range(count):
        v = make(i)
        out.append((v.name, binned(*equal_count_cells(np.sort(v.trace.iteration_seconds.ravel())))))
    return out


def engine_case(count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, make in SETS.items():
        cells = _cells(make, count)
        engine.fit_family(family("norm"), cells[0][1])  # warm-up: imports and first calls
        statuses: dict[str, int] = {}
        limit = evaluations = 0
        per = dict.fromkeys(DEFAULT_CANDIDATES, 0.0)
        with _Counted() as counted:
            for _, data in cells:
                for name in DEFAULT_CANDIDATES:
                    began = time.process_time()
                    fit = engine.fit_family(family(name), data)
                    per[name] += time.process_time() - began
                    statuses[fit.status] = statuses.get(fit.status, 0) + 1
                    limit += bool(fit.limit)
                    evaluations += fit.evaluations
        fits = sum(statuses.values())
        cpu = round(1e3 * sum(per.values()) / count, 1)
        out[label] = {"traces": count, "cpu_ms_per_trace": cpu,
                      "cpu_ms_per_fit": {k: round(1e3 * v / count, 2) for k, v in per.items()},
                      "evaluations_per_trace": round(evaluations / count),
                      "statuses": statuses, "ok_fraction": round(statuses.get("ok", 0) / fits, 4),
                      "ok_or_represented_limit_fraction": round(
                          (statuses.get("ok", 0) + limit) / fits, 4),
                      "newton_runs": counted.newton, "lbfgs_fallbacks": counted.fallbacks,
                      "lbfgs_fraction": round(counted.fallbacks / max(counted.newton, 1), 4),
                      "boundary_polishes": counted.polishes}
        print("engine", label, out[label], flush=True)
    out["cpu_ratio"] = round(out["real_shaped"]["cpu_ms_per_trace"]
                             / out["varied"]["cpu_ms_per_trace"], 3)
    return out


def speed_case(work: Path, count: int, pairs: int) -> dict[str, Any]:
    paths: dict[str, list[str]] = {}
    for label, make in SETS.items():
        folder = work / label
        folder.mkdir()
        paths[label] = []
        for i in range(count):
            v = make(i)
            write_trace(v.trace, folder / f"{v.name}.h5")
            paths[label].append(str(folder / f"{v.name}.h5"))
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in SETS}
    for i in range(pairs):
        order = list(SETS) if i % 2 == 0 else list(SETS)[::-1]
        for label in order:
            runs[label].append(_cpu_run(["analyze", *paths[label], "--out",
                                         str(work / f"r-{label}-{i}"), "--no-cache", "--quiet",
                                         "--no-figures", "--jobs", "1"], None))
            print("speed", label, runs[label][-1], loadavg(), flush=True)
    out: dict[str, Any] = {"traces": count, "pairs": pairs, "runs": runs}
    for label, got in runs.items():
        for kind in ("wall", "cpu"):
            out[f"{label}_{kind}_seconds_per_trace_median"] = round(
                float(np.median([r[kind] for r in got])) / count, 4)
    out["cpu_ratio_per_pair"] = [round(a["cpu"] / b["cpu"], 3) for a, b in
                                 zip(runs["real_shaped"], runs["varied"], strict=True)]
    out["cpu_ratio_median"] = round(float(np.median(out["cpu_ratio_per_pair"])), 3)
    return out


def strong_case(count: int) -> dict[str, Any]:
    lost: dict[str, float] = {"ok": 0.0, "boundary": 0.0}
    worst = ""
    for label, data in _cells(real_shaped_trace, count):
        for name in DEFAULT_CANDIDATES:
            fit = engine.fit_family(family(name), data)
            if fit.status not in lost:
                continue
            strong = strong_search(family(name), data, _theta(name, data, fit.params))
            gap = fit.objective - strong.objective
            if gap > lost[fit.status]:
                lost[fit.status], worst = gap, f"{label} {name}"
            print("strong", label, name, fit.status, f"lost {gap:.3g} nats", flush=True)
    return {"traces": count, "ok_nats_lost_max": lost["ok"],
            "boundary_nats_lost_max": lost["boundary"], "worst": worst}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=CASES, action="append")
    parser.add_argument("--traces", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    entry: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "targets": TARGETS,
                             "commit": _head(), "stack": _stack(),
                             "load_avg_1min_start": loadavg(),
                             **({"note": args.note} if args.note else {})}
    work = Path(tempfile.mkdtemp(prefix="ksptrace-real-shaped-"))
    try:
        for case in args.only or CASES:
            before = loadavg()
            if case == "engine":
                entry[case] = engine_case(args.traces)
            elif case == "speed":
                entry[case] = speed_case(work, args.traces, args.pairs)
            else:
                entry[case] = strong_case(args.traces)
            entry[case]["load_avg_1min_before"] = before
            entry[case]["load_avg_1min_after"] = loadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    append_entry(args.out, entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
