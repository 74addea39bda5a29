"""Monte Carlo simulation against the analytic models on a stationary synthetic trace."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.variability.stats import models, montecarlo
from ksptrace.studies.variability.stats.fitting import JohnsonSU
from ksptrace.trace.synthetic import synthetic_trace


def test_simulation_of_a_stationary_trace_matches_the_stationary_model() -> None:
    base, spread, nprocs, k = 4e-4, 0.5, 64, 400
    trace = synthetic_trace(
        nprocs, k, 16, "gmres", seed=7, stationary=True, base_seconds=base, spread=spread
    )
    fits = models.uniform_fits(trace.iteration_seconds)
    params = montecarlo.fit_parameters(fits, seed=1)
    sim = montecarlo.simulate(params, iterations=k, count=nprocs, runs=8, seed=3)
    true = st.uniform(base, base * spread)
    analytic = models.stationary_model("uniform", true, k, nprocs)
    assert sim.standard_mean == pytest.approx(analytic.standard, rel=0.02)
    # Pipelined: K mu plus the maximum over ranks of the fluctuation of each rank's sum.
    assert sim.pipelined_mean == pytest.approx(analytic.pipelined, rel=0.03)
    assert sim.pipelined_mean > analytic.pipelined
    # And both agree with the trace's own lockstep and pipelined runtimes.
    assert sim.standard_mean == pytest.approx(
        models.measured_standard(trace.iteration_seconds), rel=0.02
    )
    assert sim.pipelined_mean == pytest.approx(
        models.measured_pipelined(trace.iteration_seconds), rel=0.03
    )


def test_exact_max_sampling_matches_expected_max_of_uniforms() -> None:
    rng = np.random.default_rng(0)
    k = 20_000
    lower, span = np.full(k, 1.0), np.full(k, 2.0)
    for count in (1, 7, 1000):
        standard, pipelined = montecarlo.simulate_given(lower, span, count, rng)
        exact = float(models.expected_max_uniform(1.0, 2.0, count)) * k
        sd = 2.0 * np.sqrt(count / ((count + 1) ** 2 * (count + 2))) * np.sqrt(k)
        assert abs(standard - exact) < 5 * sd
        assert pipelined >= 2.0 * k - 5 * np.sqrt(k / 3.0)


def test_simulation_is_seeded_and_bounded_below_by_zero() -> None:
    params = montecarlo.ParameterFits(
        lower=JohnsonSU(0.5, 2.0, 4e-4, 5e-5), span=JohnsonSU(0.5, 2.0, 1e-4, 5e-5)
    )
    a = montecarlo.simulate(params, 300, 32, runs=3, seed=11)
    b = montecarlo.simulate(params, 300, 32, runs=3, seed=11)
    assert np.array_equal(a.standard, b.standard)
    assert np.array_equal(a.pipelined, b.pipelined)
    assert (a.standard > 0).all()
    assert (a.standard >= a.pipelined - 1e-12).all()


def test_a_priori_prediction_reports_relative_error() -> None:
    source = synthetic_trace(64, 300, 16, "gmres", seed=1)
    target = synthetic_trace(128, 300, 16, "gmres", seed=2)
    params = montecarlo.fit_parameters(models.uniform_fits(source.iteration_seconds))
    pred = montecarlo.predict(
        params,
        target.iterations,
        target.nprocs // 16,
        target.solve_max,
        pipelined=False,
        source=source.label,
        target=target.label,
        runs=4,
    )
    assert pred.relative_error == pytest.approx(pred.simulated / target.solve_max - 1.0)
    assert abs(pred.relative_error) < 0.3


def test_simulation_reports_the_standard_error_of_its_means() -> None:
    params = montecarlo.ParameterFits(
        lower=JohnsonSU(0.5, 2.0, 4e-4, 5e-5), span=JohnsonSU(0.5, 2.0, 1e-4, 5e-5)
    )
    sim = montecarlo.simulate(params, 200, 8, runs=5, seed=2)
    assert sim.standard_stderr == pytest.approx(float(np.std(sim.standard, ddof=1) / np.sqrt(5)))
    assert sim.pipelined_stderr == pytest.approx(float(np.std(sim.pipelined, ddof=1) / np.sqrt(5)))
    assert sim.standard_stderr is not None
    assert 0 < sim.standard_stderr < 0.01 * sim.standard_mean
    one = montecarlo.simulate(params, 200, 8, runs=1, seed=2)
    assert one.standard_stderr is None


def test_a_collapsed_fit_is_simulated_from_its_normal_limit() -> None:
    # A fit at the edge of the normal limit with a wrong mean: the normal limit is used instead.
    broken = JohnsonSU(-1e8, 1e8, -2000.0, 1e3)
    params = montecarlo.ParameterFits(
        lower=JohnsonSU(0.5, 2.0, 4e-4, 5e-5),
        span=broken,
        span_normal=montecarlo.NormalLimit(mean=2e-5, std=1e-6),
    )
    k, count = 400, 4
    sim = montecarlo.simulate(params, k, count, runs=4, seed=1)
    lower = params.lower.frozen().mean()
    expected = k * float(models.expected_max_uniform(lower, 2e-5, count))
    assert sim.standard_mean == pytest.approx(expected, rel=0.02)
