"""The survey's segmented-ring and LogGP allreduce models (Table 3): optimal segment sizes
against a brute-force minimum, parameters recovered from synthetic times at 0, 2 and 10 % noise,
and the best model of a curve chosen by held-out sizes."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives import model_choice as mc
from ksptrace.studies.collectives import segmented as sg

HOCKNEY = sg.Hockney(alpha=2e-6, beta=4e-10, gamma=1e-10)
SIZES = 2.0 ** np.arange(0, 21)


def _continuous(time: Callable[[np.ndarray], np.ndarray], m: float) -> float:
    """Minimise a continuous-n_s model (n_s = m / m_s) on a fine grid of m_s."""
    grid = np.exp(np.linspace(0.0, math.log(m), 200_001))
    return float(grid[np.argmin(time(grid))])


@pytest.mark.parametrize("nprocs", [3, 4, 16, 64])
@pytest.mark.parametrize("m", [2.0**16, 2.0**20, 2.0**24])
def test_hockney_optimum_is_the_minimum(nprocs: int, m: float) -> None:
    h = HOCKNEY

    def t(ms: np.ndarray) -> np.ndarray:  # Table 3 with n_s = m / m_s
        return (nprocs + m / ms - 2) * (h.alpha + (h.beta + h.gamma) * ms)

    found = sg.optimal_segment_hockney(h, nprocs, m)
    assert found == pytest.approx(_continuous(t, m), rel=1e-3)


@pytest.mark.parametrize("case", ["gap", "overhead"])
def test_loggp_optimum_is_the_minimum(case: str) -> None:
    nprocs, m = 16, 2.0**22
    p = (sg.LogGP(L=3e-6, o=1e-6, G=2e-10, g=2e-5, gamma=1e-11) if case == "gap" else
         sg.LogGP(L=3e-6, o=5e-6, G=2e-10, g=1e-7, gamma=1e-10))

    def t(ms: np.ndarray) -> np.ndarray:
        return ((nprocs - 1) * (p.L + 2 * p.o + (ms - 1) * p.G)
                + (m / ms - 1) * (np.maximum(p.g, p.gamma * ms + p.o) + (ms - 1) * p.G))

    found = sg.optimal_segment_loggp(p, nprocs, m)
    assert found is not None
    assert found == pytest.approx(_continuous(t, m), rel=1e-3)


def test_best_segment_is_a_power_of_two_that_beats_one_segment() -> None:
    choice = sg.best_segment(HOCKNEY, 16, 2**22)
    assert choice.best_power_of_two & (choice.best_power_of_two - 1) == 0
    assert choice.predicted_seconds < choice.unsegmented_seconds
    assert choice.continuous is not None
    assert choice.best_power_of_two / 2 <= choice.continuous <= choice.best_power_of_two * 2
    with pytest.raises(AnalysisError, match="P >= 3"):
        sg.best_segment(HOCKNEY, 2, 2**22)


@pytest.mark.parametrize("noise", [0.0, 0.02, 0.10])
def test_segmented_ring_fit_recovers_alpha_beta_gamma(noise: float) -> None:
    rng = np.random.default_rng(7)
    rows = [(p, m, s) for p in (4, 8, 16) for m in (2**16, 2**18, 2**20, 2**22)
            for s in (2**10, 2**12, 2**14, 2**16)]
    p, m, s = (np.array(c, dtype=np.float64) for c in zip(*rows, strict=True))
    t = np.array([sg.segmented_ring_hockney(HOCKNEY, int(a), b, c) for a, b, c in rows])
    t *= 1 + noise * rng.standard_normal(t.size)
    fit = sg.fit_segmented_ring_hockney(p, m, s, t)
    tolerance = {0.0: 1e-6, 0.02: 0.05, 0.10: 0.25}[noise]
    assert fit.alpha == pytest.approx(HOCKNEY.alpha, rel=tolerance)
    assert fit.beta + fit.gamma == pytest.approx(HOCKNEY.beta + HOCKNEY.gamma, rel=tolerance)


def test_loggp_ring_and_recursive_doubling_follow_table_3() -> None:
    p = sg.LogGP(L=3e-6, o=1e-6, G=2e-10, gamma=1e-10)
    m = np.array([4096.0])
    ring = sg.ring_loggp(p, 8, m)[0]
    assert ring == pytest.approx(2 * 7 * (3e-6 + 2e-6 + (512 - 1) * 2e-10) + 7 * 1e-10 * 512)
    rd = sg.recursive_doubling_loggp(p, 8, m)[0]
    assert rd == pytest.approx(3 * (5e-6 + 4095 * 2e-10) + 3 * 1e-10 * 4096)


def _noisy(t: np.ndarray, noise: float, seed: int) -> np.ndarray:
    return t * (1 + noise * np.random.default_rng(seed).standard_normal(t.size))


@pytest.mark.parametrize("noise", [0.0, 0.02, 0.10])
def test_held_out_sizes_choose_the_true_model(noise: float) -> None:
    line = 3e-6 + 2.5e-10 * SIZES
    bent = np.where(SIZES <= 8192, 2e-6 + 5e-10 * SIZES, 2e-6 + 5e-10 * 8192 +
                    1e-10 * (SIZES - 8192))
    for seed in range(5):
        linear = mc.choose_model(SIZES, _noisy(line, noise, seed))
        assert linear.best in ("hockney", "loggp"), linear  # one line: the simple models
        assert linear.held_out == SIZES.size
        bend = mc.choose_model(SIZES, _noisy(bent, noise, seed))
        assert bend.best == "plogp", bend
        assert bend.errors["plogp"] < bend.errors["hockney"]


def test_choice_needs_sizes_and_known_models() -> None:
    with pytest.raises(AnalysisError, match="at least 5 distinct message sizes"):
        mc.choose_model(SIZES[:4], SIZES[:4] * 1e-9 + 1e-6)
    with pytest.raises(AnalysisError, match="unknown model"):
        mc.choose_model(SIZES, SIZES * 1e-9 + 1e-6, ("hockney", "logp"))


def test_the_report_names_one_chosen_model_per_curve() -> None:
    from ksptrace.studies.collectives.report import model_fits
    from ksptrace.studies.collectives.synthetic import allreduce_traces

    table = model_fits(allreduce_traces(nprocs=(2, 4), noise=0.01))
    per_curve = table.groupby(["op", "algorithm", "P"])["chosen"].sum()
    assert (per_curve == 1).all(), per_curve
    assert table["held_out_rms_rel"].notna().all()
    # the synthetic curves are lines in m (Hockney's formulas): a line model predicts best
    assert set(table.loc[table["chosen"], "model"]) <= {"hockney", "loggp"}
