"""Q2's estimators against the discrete-event model's known truth (issue 62).

The full grid (P = 2..64, detour / iteration 0.1..8, p 0.01..0.3) runs in
``bench/noise_truth.py``; here a representative part, seeded, and the lag bias of the in-run
estimator before issue 62, which the report's own code path must no longer show."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.noise.simulate import PIPELINED, STANDARD, draw_detours, natural_work, simulate
from ksptrace.noise.spec import parse
from ksptrace.studies.noise.truth import Setting, validate
from ksptrace.studies.variability.stats.injected import injected_noise

CAMPAIGNS = 1000
"""Per setting: the coverage's Monte Carlo error is then 0.7 %, so a 95 % interval lands in
93-97 % unless it is not one."""


def _round4(depth: int, runs: int = 60, k: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Simulated runs of the demo's round-4 design: P = 2, iterations of 250 µs, exponential
    1 ms detours in 10 % of iterations. (report's in-run costs, true costs), seconds."""
    spec = parse("exponential:scale=1ms,p=0.1")
    rng = np.random.default_rng(62)
    work = natural_work(rng, (runs, 2, k), 250e-6, jitter=0.05)
    d = draw_detours(spec, rng, (runs, 2, k))
    noisy, quiet = simulate(work, d, 25e-6, depth), simulate(work, 0 * d, 25e-6, depth)
    measured = []
    for i in range(runs):  # the report's own path: a trace's times and recorded detours
        cost = injected_noise(noisy.times[i], d[i], spec).detour_cost(
            float(noisy.solve[i]), k, pipelined=depth == PIPELINED)
        assert cost is not None
        measured.append(cost)
    return np.array(measured), noisy.solve - quiet.solve


def test_the_in_run_cost_of_simulated_pgmres_pays_the_lag() -> None:
    """Before issue 62 a pipelined run's lagged iterations counted as quiet and the in-run cost
    of PGMRES came out 44 % below its true cost here (the demo's "pipelined pays less")."""
    measured, truth = _round4(PIPELINED)
    assert abs(measured.mean() / truth.mean() - 1) <= 0.05


def test_the_in_run_cost_of_a_standard_method_is_unbiased() -> None:
    measured, truth = _round4(STANDARD)
    assert abs(measured.mean() / truth.mean() - 1) <= 0.05


SETTINGS = [
    pytest.param(Setting(2, 4.0, 0.1, blocks=3), id="round-4 design, 3 blocks"),
    pytest.param(Setting(4, 0.1, 0.3), id="P=4, short frequent detours"),
    pytest.param(Setting(16, 8.0, 0.01, blocks=8), id="P=16, long rare detours, 8 blocks"),
]


@pytest.mark.parametrize("setting", SETTINGS)
def test_the_verdicts_estimator_is_unbiased_and_its_interval_covers(setting: Setting) -> None:
    """Q2's verdict and figures come from the whole-solve pairing only: each method's cost
    and their difference, with Student t intervals over blocks."""
    checks = {c.name: c for c in validate(setting, CAMPAIGNS, seed=62)}
    for name in ("kspsolve standard", "kspsolve pipelined", "kspsolve difference"):
        c = checks[name]
        assert c.campaigns == CAMPAIGNS
        assert c.standard_error <= 0.03 * c.truth, name  # the check can resolve 5 %
        assert abs(c.relative_bias) <= 0.05, (name, c)
        assert 0.93 <= c.coverage <= 0.97, (name, c)
    assert checks["over-mean standard"].truth == pytest.approx(1.0)  # lockstep stamps


def test_e_max_over_the_mean_gets_a_range_not_an_interval() -> None:
    """The verdict sentence's last figures: a t interval of the pipelined maxₚ Σₖ Tₚᵏ over K
    times the mean covers its expectation in about half of the round-4 design's 3-block
    campaigns (its per-block values are heavily skewed), so the sentence gives the blocks'
    range and no interval."""
    checks = {c.name: c for c in validate(Setting(2, 4.0, 0.1, blocks=3), CAMPAIGNS, seed=62)}
    assert checks["over-mean pipelined"].coverage < 0.9


def test_the_bootstrap_intervals_used_before_did_not_cover_with_three_blocks() -> None:
    """Why the intervals are Student t's now: the expanded bootstrap percentiles of the demo's
    3 blocks cannot reach past the blocks' range, and covered the truth in about 3 of 4."""
    from ksptrace.studies.noise import paired
    from ksptrace.studies.noise.truth import simulate_campaigns

    f = simulate_campaigns(Setting(2, 4.0, 0.1, blocks=3), 300, seed=3)
    diff = f["kspsolve standard"] - f["kspsolve pipelined"]
    truth = float((f["truth standard"] - f["truth pipelined"]).mean())
    covered = 0
    for row in diff:
        picks = np.random.default_rng(0).integers(0, 3, size=(paired.RESAMPLES, 3))
        tail = paired.expanded_tail(3)
        low, high = np.quantile(row[picks].mean(axis=1), [tail, 1 - tail])
        covered += low <= truth <= high
    assert covered / diff.shape[0] < 0.85
    _, lows, highs = paired.intervals(diff)  # 93-97 % over 1000 campaigns: the test above
    assert np.mean((lows <= truth) & (truth <= highs)) > 0.9


def test_the_in_run_estimator_before_issue_62_fails_the_same_check() -> None:
    """The validation can fail: the lag-blind in-run cost misses PGMRES's true cost by far;
    the lag-aware one is far closer, but gives no verdict (it misses the targets elsewhere:
    bench/results/noise_truth.json)."""
    checks = {c.name: c for c in validate(Setting(2, 4.0, 0.1, blocks=3), 300, seed=1)}
    old, new = checks["in-run, lag 0 pipelined"], checks["in-run pipelined"]
    assert old.relative_bias < -0.3
    assert old.coverage < 0.6
    assert abs(new.relative_bias) < 0.05
