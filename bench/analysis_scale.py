"""Paper-scale analysis benchmark: P = 8192 ranks, K = 5000 iterations (about 41 M samples).

Times the whole analysis of one synthetic trace (KS rank r vs all, node variances, bulk fits of
the candidate list on a subsample, every model, Monte Carlo, tables; no figures), records the
peak resident memory, and times the naive route (scipy ks_2samp per pair, quad per iteration)
on a subset to report the speed-up and check that the numbers agree. Writes
bench/results/analysis_scale.json.

    .venv/bin/python bench/analysis_scale.py [--nprocs 8192] [--iterations 5000]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.stats as st

from ksptrace.studies.variability.pages import tables
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats import models
from ksptrace.trace.synthetic import synthetic_trace

RESULT = Path(__file__).resolve().parent / "results" / "analysis_scale.json"


def peak_rss_gib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def naive_ks(times: np.ndarray, reference: int, others: np.ndarray) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    d = np.array([st.ks_2samp(times[reference], times[q]).statistic for q in others])
    return d, time.perf_counter() - t0


def naive_quad(lower: np.ndarray, span: np.ndarray, count: float) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    out = np.array(
        [
            models.expected_max_direct(st.uniform(a, s), count, a, a + s)
            for a, s in zip(lower, span, strict=True)
        ]
    )
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=8192)
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--ranks-per-node", type=int, default=64)
    parser.add_argument("--ksp", default="gmres")
    parser.add_argument("--naive-pairs", type=int, default=200)
    parser.add_argument("--naive-iterations", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    trace = synthetic_trace(args.nprocs, args.iterations, args.ranks_per_node, args.ksp, seed=0)
    times = trace.iteration_seconds
    generate_s = time.perf_counter() - t0

    steps: dict[str, float] = {}
    last = {"step": "start", "t": time.perf_counter()}

    def progress(step: str, fraction: float) -> None:
        now = time.perf_counter()
        if step != last["step"]:
            steps[str(last["step"])] = steps.get(str(last["step"]), 0.0) + now - float(last["t"])
            last["step"], last["t"] = step, now

    options = AnalysisOptions(fit_size=10_000, mc_runs=16, seed=0)
    t1 = time.perf_counter()
    last["t"] = t1
    analysis = analyze_trace(trace, options, progress)
    built = [
        tables.model_table([analysis]),
        tables.prediction_table([analysis]),
        tables.variability_table([analysis]),
        tables.fit_table(analysis),
    ]
    csv_bytes = sum(len(t.to_csv()) for t in built)
    analysis_s = time.perf_counter() - t1
    steps.pop("start", None)
    peak = peak_rss_gib()

    # Naive route on a subset, against the same numbers from the vectorised route.
    assert analysis.ks_all is not None
    subset = analysis.ks_all.others[: args.naive_pairs]
    fast_all_s = steps.get("KS tests", float("nan"))
    naive_d, naive_ks_s = naive_ks(times, options.reference_rank, subset)
    ks_diff = float(np.abs(naive_d - analysis.ks_all.statistics[: subset.size]).max())
    fast_pair_s = fast_all_s / analysis.ks_all.others.size
    naive_pair_s = naive_ks_s / subset.size

    kq = args.naive_iterations
    lower, span = analysis.uniform.lower[:kq], analysis.uniform.span[:kq]
    naive_e, naive_quad_s = naive_quad(lower, span, analysis.count)
    t2 = time.perf_counter()
    for _ in range(100):
        closed = models.expected_max_uniform(lower, span, analysis.count)
    closed_s = (time.perf_counter() - t2) / 100
    quad_rel = float(np.abs(naive_e / closed - 1.0).max())

    n_pairs = analysis.ks_all.others.size
    naive_route_s = n_pairs * naive_pair_s + args.iterations * naive_quad_s / lower.size
    fast_route_s = fast_all_s + closed_s / lower.size * args.iterations
    best = analysis.bulk.best if analysis.bulk is not None else None
    result = {
        "what": "analysis of one synthetic trace, end to end, figures excluded",
        "nprocs": args.nprocs,
        "iterations": args.iterations,
        "samples": int(times.size),
        "ranks_per_node": args.ranks_per_node,
        "ksp": args.ksp,
        "generate_seconds": round(generate_s, 2),
        "analysis_seconds": round(analysis_s, 2),
        "step_seconds": {k: round(v, 2) for k, v in steps.items()},
        "peak_rss_gib": round(peak, 3),
        "budget": {"seconds": 60, "gib": 4},
        "within_budget": bool(analysis_s <= 60 and peak <= 4),
        "fit_size": options.fit_size,
        "mc_runs": options.mc_runs,
        "table_csv_bytes": csv_bytes,
        "results": {
            "kspsolve": analysis.measured,
            "nonstationary_standard": analysis.nonstationary.standard,
            "best_family": None if best is None else best.name,
            "stationary_best": None
            if best is None
            else next(m.standard for m in analysis.stationary if m.family == best.name),
            "simulated": analysis.simulated,
            "ks_fraction_rejected": analysis.ks_all.fraction_rejected,
        },
        "naive": {
            "ks_pairs": int(subset.size),
            "ks_seconds_per_pair_naive": naive_pair_s,
            "ks_seconds_per_pair_vectorised": fast_pair_s,
            "ks_speedup": round(naive_pair_s / fast_pair_s, 1),
            "ks_max_abs_difference": ks_diff,
            "quad_iterations": int(lower.size),
            "quad_seconds_per_iteration": naive_quad_s / lower.size,
            "closed_form_seconds_per_iteration": closed_s / lower.size,
            "quad_speedup": round(naive_quad_s / closed_s, 1),
            "quad_max_rel_difference": quad_rel,
            "route_note": "naive full-size time extrapolated from the subset: "
            "(P-1) ks_2samp calls + K quad calls, against the vectorised KS step + closed form",
            "route_seconds_naive": naive_route_s,
            "route_seconds_vectorised": fast_route_s,
            "route_speedup": round(naive_route_s / fast_route_s, 1),
        },
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "cpu_count_note": "2 cores, shared with other jobs",
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = result["within_budget"] and ks_diff <= 1e-12 and quad_rel <= 1e-9
    ok = ok and naive_route_s / fast_route_s >= 10
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
