"""Repetitions on a busy machine: the noise read from below, the minimum, load notes, advice."""

from __future__ import annotations

import numpy as np

from ksptrace.studies.segmentation.load import sweep_load
from ksptrace.studies.segmentation.segment import repetition_noise, segment
from tests.cli.test_segment import oversubscribed_trace


def staircase(p: np.ndarray) -> np.ndarray:
    """Weak scaling on 2 cores: flat while each rank has a core, then about ceil(P / 2)."""
    return np.where(p <= 2, 0.058 + 0.001 * p, 0.065 * np.ceil(p / 2) + 0.002 * p)


def test_repetition_noise_is_read_from_below() -> None:
    rng = np.random.default_rng(0)
    p = np.repeat(np.arange(1.0, 41.0), 3)
    y = 1.0 + 0.02 * rng.standard_normal(p.size)
    assert 0.014 < repetition_noise(p, y) < 0.028
    # interference adds time to one repetition in three: the estimate barely moves
    hit = np.arange(p.size) % 3 == 0
    disturbed = np.where(hit, y * rng.uniform(1.2, 2.0, p.size), y)
    assert repetition_noise(p, disturbed) < 0.035
    assert np.isnan(repetition_noise(np.arange(1.0, 9.0), np.ones(8)))


def test_the_minimum_survives_interference_the_median_does_not() -> None:
    # two of three repetitions at P = 3, 4 were slowed by a background job
    p = np.repeat(np.arange(1.0, 9.0), 3)
    clean = staircase(p) * (1 + np.random.default_rng(1).uniform(0, 0.01, p.size))
    slowed = ((p == 3) | (p == 4)) & (np.arange(p.size) % 3 != 0)
    y = np.where(slowed, clean * 1.8, clean)
    by_min = segment(p, y, reduce="min")
    assert [(c.p_lo, c.p_hi) for c in by_min.change_points] == [(2, 3)]
    by_median = segment(p, y)
    assert [(c.p_lo, c.p_hi) for c in by_median.change_points] != [(2, 3)]


def test_advice_beyond_the_cores_says_so() -> None:
    p = np.arange(1.0, 10.0)
    y = np.where(p <= 5, 10.0 + p, 100.0 + 40 * p**2)
    res = segment(p, y, cores=8)
    advice = " ".join(s.advice for s in res.segments)
    assert "add measurements at p = 10" in advice
    assert "exceeds the 8 cores" in advice
    assert "exceeds" not in " ".join(s.advice for s in segment(p, y, cores=64).segments)


def test_sweep_load_reports_load_and_wide_spreads() -> None:
    traces = []
    for nprocs in (1, 2, 3):
        for rep in range(2):
            t = oversubscribed_trace(nprocs, seed=10 * nprocs + rep)
            attrs = {**t.attrs, "cpu_count": 2, "loadavg_before": 1.5 + nprocs,
                     "foreign_cpu_share": 0.4 if nprocs == 3 else 0.01}  # fmt: skip
            traces.append(type(t)(t.stamps, t.residual_norms, t.node_ids, t.hostnames,
                                  t.solve_seconds, attrs))  # fmt: skip
    p = np.array([1.0, 1, 2, 2, 3, 3])
    y = np.array([1.0, 1.01, 2.0, 2.02, 3.0, 3.9])
    load = sweep_load(traces, p, y)
    assert load.cores == 2
    assert load.loadavg_max == 4.5
    assert load.loaded_p == (3.0,)
    text = "\n".join(load.notes())
    assert "load average up to 4.50 on 2 cores" in text
    assert "runs at P = 3 were disturbed" in text
    assert "differ by more than 5% at P = 3" in text
