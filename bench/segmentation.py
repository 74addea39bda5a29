"""Throughput of segmentation: ten-point series per second on one core, detection plus models.

Run as ``python bench/segmentation.py``; writes ``bench/results/segmentation.json``. Target:
>= 2000 series/s (Extra-P's Segmented modeler takes roughly 0.1-0.2 s per series). The series
are the synthetic evaluation's (in and out of search space, half segmented, 5 % noise, both
spacings); the time covers window models, detection, change point and both segment models.
The batched path is also compared with calling ``segment`` once per series.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core: set before numpy loads its BLAS

import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from ksptrace.studies.segmentation import synthetic as syn  # noqa: E402
from ksptrace.studies.segmentation.segment import (  # noqa: E402
    SegmentationParams,
    detect_many,
    model_segments_many,
    segment,
)

RESULTS = Path(__file__).resolve().parent / "results" / "segmentation.json"
TARGET = 2000.0
SERIES = 20_000
CHUNK = 5_000
REPEATS = 5


def workload(rng: np.random.Generator, spacing: syn.Spacing) -> tuple[np.ndarray, np.ndarray]:
    parts = []
    quarter = SERIES // 4
    for space in ("in", "out"):
        for seg in (False, True):
            parts.append(syn.make_batch(rng, quarter, space, spacing, 0.05, 5, 5, seg))
    return parts[0].p, np.concatenate([b.y for b in parts])


def batched_rate(p: np.ndarray, y: np.ndarray, params: SegmentationParams) -> float:
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for start in range(0, y.shape[0], CHUNK):
            chunk = y[start : start + CHUNK]
            det = detect_many(p, chunk, params)
            model_segments_many(chunk, det, params)
        times.append(time.perf_counter() - t0)
    return y.shape[0] / float(np.median(times))


def one_by_one_rate(p: np.ndarray, y: np.ndarray, params: SegmentationParams) -> float:
    count = 300
    t0 = time.perf_counter()
    for s in range(count):
        segment(p, y[s], params)
    return count / (time.perf_counter() - t0)


def main() -> int:
    rng = np.random.default_rng(7)
    params = SegmentationParams()
    results = {}
    for spacing in ("linear", "geometric"):
        p, y = workload(rng, spacing)
        batched_rate(p, y[:CHUNK], params)  # warm-up: design matrices, caches
        results[spacing] = {
            "batched_series_per_s": round(batched_rate(p, y, params)),
            "one_by_one_series_per_s": round(one_by_one_rate(p, y, params)),
            "paper_variant_batched_series_per_s": round(
                batched_rate(p, y, SegmentationParams.paper())
            ),
        }
    worst = min(r["batched_series_per_s"] for r in results.values())
    report = {
        "benchmark": "segmentation of ten-point series, detection + segment models, one core",
        "series": SERIES,
        "chunk": CHUNK,
        "repeats": REPEATS,
        "target_series_per_s": TARGET,
        "results": results,
        "meets_target": worst >= TARGET,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": platform.machine(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0 if report["meets_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
