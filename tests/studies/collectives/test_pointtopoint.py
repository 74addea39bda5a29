"""LogP with its gap and PLogP with size-dependent overheads recover known parameters from
synthetic measurements without noise, at 2 % and at 10 % (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives import pointtopoint as pp

SIZES = 2.0 ** np.arange(0, 21)  # 1 B .. 1 MiB
SWITCH = 4096.0
NOISES = (0.0, 0.02, 0.10)


def _piece(m: np.ndarray, c: float, s0: float, s1: float) -> np.ndarray:
    return c + s0 * np.minimum(m, SWITCH) + s1 * np.maximum(m - SWITCH, 0)


TRUE = {"send_overhead": (0.9e-6, 0.2e-10, 1.1e-10),
        "recv_overhead": (1.8e-6, 0.1e-10, 1.5e-10),
        "gap": (0.7e-6, 0.5e-10, 0.9e-10)}
"""Intercept, slope below and slope above the protocol switch (shaped like the Open MPI
shared-memory measurement in docs/collectives.md)."""
LATENCY = 0.3e-6


def _draws(noise: float, seed: int, reps: int = 20) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    clean = {k: _piece(SIZES, *v) for k, v in TRUE.items()}
    clean["half_round_trip"] = LATENCY + clean["gap"]
    return {k: v[:, None] * (1 + noise * rng.standard_normal((SIZES.size, reps)))
            for k, v in clean.items()}


@pytest.mark.parametrize("noise", NOISES)
def test_plogp_recovers_overheads_gap_and_latency(noise: float) -> None:
    d = _draws(noise, seed=3)
    model = pp.fit_plogp_model(SIZES, d["half_round_trip"], d["send_overhead"],
                               d["recv_overhead"], d["gap"])
    tol = 1e-6 if noise == 0 else noise / 2
    for name, (c, s0, s1) in TRUE.items():
        f = getattr(model, name)
        # a kink without a step: 4096 lies on both lines, so the second piece starts there or
        # at the next size (the fit allows steps since issue 54)
        assert f.breakpoints in ((int(SWITCH),), (int(2 * SWITCH),)), name
        assert f(SIZES) == pytest.approx(_piece(SIZES, c, s0, s1), rel=tol), name
        assert f.intercept == pytest.approx(c, rel=tol), name
        assert f.slopes[1] == pytest.approx(s1, rel=tol), name
    assert pytest.approx(LATENCY, rel=1e-6 if noise == 0 else 5 * noise + 0.05,
                                    abs=0 if noise == 0 else 0.1e-6) == model.L
    assert model.round_trip(SIZES) == pytest.approx(2 * (LATENCY + _piece(SIZES, *TRUE["gap"])),
                                                    rel=max(1e-9, noise / 2))


def test_plogp_takes_a_trace_cube_and_says_when_it_floors() -> None:
    d = _draws(0.0, seed=0, reps=3)
    cube = {k: np.stack([v, v]) for k, v in d.items()}  # [P=2, M, R]
    cube["gap"][:, :3, :] = -1e-8  # tiny differences of two times came out negative
    model = pp.fit_plogp_model(SIZES, cube["half_round_trip"], cube["send_overhead"],
                               cube["recv_overhead"], cube["gap"])
    assert "gap at or below zero" in model.note
    with pytest.raises(AnalysisError, match="one row per message size"):
        pp.fit_plogp_model(SIZES[:5], d["half_round_trip"], d["send_overhead"],
                           d["recv_overhead"], d["gap"])


@pytest.mark.parametrize("noise", NOISES)
def test_logp_recovers_intercept_and_gap(noise: float) -> None:
    big_l, o, g, word = 1.5e-6, 0.4e-6, 0.6e-6, 1024
    truth = pp.LogP(big_l, o, g)
    t = truth.time(SIZES, word)
    t = t * (1 + noise * np.random.default_rng(5).standard_normal(t.size))
    fit = pp.fit_logp(SIZES, t, word, o=o)
    tol = 1e-9 if noise == 0 else noise
    assert fit.params["g"] == pytest.approx(g, rel=tol)
    assert fit.params["L_plus_2o"] == pytest.approx(big_l + 2 * o, rel=tol)
    assert fit.params["L"] == pytest.approx(big_l, rel=3 * tol)
    assert truth.in_flight == pytest.approx(2.5)


def test_logp_from_a_plogp_measurement() -> None:
    d = _draws(0.0, seed=0)
    logp = pp.logp_from_plogp(pp.fit_plogp_model(SIZES, d["half_round_trip"],
                                                 d["send_overhead"], d["recv_overhead"],
                                                 d["gap"]))
    o = (_piece(SIZES[:1], *TRUE["send_overhead"])[0]
         + _piece(SIZES[:1], *TRUE["recv_overhead"])[0]) / 2
    assert logp.o == pytest.approx(o)
    assert logp.g == pytest.approx(_piece(SIZES[:1], *TRUE["gap"])[0])
    assert logp.L == 0.0  # RTT/2 (1.0 us) < 2o (2.7 us): said, not negative
    assert "L set to 0" in logp.note
    assert "g < o" in logp.note


def test_logp_needs_more_than_one_word() -> None:
    with pytest.raises(AnalysisError, match="one 4096-byte word"):
        pp.fit_logp(np.array([8.0, 64, 512]), np.array([1e-6, 1e-6, 1e-6]), 4096)
