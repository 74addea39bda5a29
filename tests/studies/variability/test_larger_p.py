"""Q3's larger-P prediction (issue 63): runs at a smaller P predict KSPSolve at a larger P
through the bulk-plus-detours model, beside the smaller P's time and its growth-scaled time,
on traces of known truth (independent ranks, 3 % detours of 5 ms on a 1 ms bulk)."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.studies.variability.conclusions import answers, heldout_skill, larger_p
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.trace.synthetic import trace_from_times

FEW = AnalysisOptions(candidates=("norm",), mc_runs=2)
K = 3000


def _run(nprocs: int, seed: int, ksp: str = "gmres") -> TraceAnalysis:
    rng = np.random.default_rng(seed)
    shape = (nprocs, K)
    times = rng.normal(1e-3, 3e-5, shape) + (rng.random(shape) < 0.03) * rng.exponential(
        5e-3, shape)
    return analyze_trace(trace_from_times(times, ksp=ksp, seed=seed, n=1000 * nprocs), FEW)


def test_runs_at_a_smaller_p_predict_a_larger_p_better_than_the_baselines() -> None:
    p4, p8, p64 = _run(4, 1), _run(8, 2), _run(64, 3)
    found = larger_p.larger_p_predictions([p4, p8, p64])
    assert sorted((h.p_from, h.p_to) for h in found) == [(4, 8), (4, 64), (8, 64)]
    up = next(h for h in found if (h.p_from, h.p_to) == (8, 64))
    assert p8.tails is not None
    assert p8.tails.detours is not None
    assert up.predicted == pytest.approx(K * p8.tails.detours.expected_max(64))
    assert up.error_pct is not None
    assert abs(up.error_pct) <= 10.0
    assert abs(up.error_pct) <= 100 * 3 * up.se / up.predicted + 2.0  # within its own error
    # the smaller P's time misses what the detours do at 64 ranks; the growth from P = 4 to 8
    # scales it, but not as the maximum of 64 draws grows
    assert up.baseline_error_pct is not None
    assert up.baseline_error_pct < -25.0
    assert up.scaled is not None
    assert up.skill is not None
    assert up.skill > 0.5
    said = " ".join(answers.models([p4, p8, p64]).sentences)
    assert "From runs at a smaller P (P = 4, 8 → 8, 64, the same n/P, standard methods" in said
    assert "better than the smaller P's measured time" in said
    assert "no better than the smaller P's measured time" not in said
    rows = [r for r in heldout_skill.heldout_table([p4, p8, p64]).records()
            if r["basis"] == larger_p.LARGER_P]
    assert len(rows) == 3
    assert all(r["skill"] is not None for r in rows)


def test_pipelined_methods_and_another_k_are_not_predicted() -> None:
    small, large = _run(4, 1, "pgmres"), _run(8, 2, "pgmres")
    assert larger_p.larger_p_predictions([small, large]) == ()
    assert larger_p.predict_larger(_run(4, 1), large) is None
