"""Flags instead of silence: each suspicious number of analyze_trace says why (synthetic traces)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksptrace.studies.variability.run import flags, pipeline
from ksptrace.studies.variability.run.options import AnalysisOptions, units
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.studies.variability.stats import models, montecarlo
from ksptrace.studies.variability.stats.fitting import fit_johnsonsu
from ksptrace.studies.variability.stats.outliers import COLLAPSE_B, jsu_collapsed
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import inject_outliers, synthetic_trace, trace_from_times

FEW = ("johnsonsu", "lognorm", "norm")


def _codes(a: TraceAnalysis, subject: str) -> list[str]:
    return [f.code for f in a.flags if f.subject == subject]


def _outlier_trace() -> Trace:
    """BiCGStab on two nodes, a bulk near 0.3 ms and 3 % of iterations held up by 8-28 ms."""
    base = synthetic_trace(2, 600, 1, "bcgs", seed=5, base_seconds=2.8e-4)
    times = inject_outliers(base.iteration_seconds, 0.03, 8e-3, 28e-3, seed=1)
    return trace_from_times(times, np.array([0, 1]), ksp="bcgs")


def test_outlier_pulled_fits_stay_in_table1_flagged_and_explain_far_predictions() -> None:
    a = analyze_trace(_outlier_trace(), AnalysisOptions(candidates=FEW))
    # The JSU fit follows the bulk; the sample mean is pulled up by the outliers.
    jsu = a.model("johnsonsu")
    assert jsu is not None, a.notes
    assert not any("johnsonsu" in n and "did not converge" in n for n in a.notes)
    assert _codes(a, "stationary model (johnsonsu)")[0] == "fit-mean-outliers"
    flag = a.flagged("fit-mean-outliers")[0]
    assert "because of outliers (36 of 1200 values from 10.7 ms to 28.1 ms)" in flag.message
    # a_k carries the outliers too: its JSU fit is flagged and the Monte Carlo says why it is off.
    assert "fit-mean-outliers" in _codes(a, "JSU fit of a_k")
    far = [f for f in a.flagged("prediction-far") if f.subject == "Monte Carlo"]
    assert len(far) == 1
    assert a.simulated is not None
    assert a.simulated < 0.5 * a.measured
    assert "Johnson S_U fit of a_k follows the bulk" in far[0].message
    assert "18 of 600 values" in far[0].message
    # The normal fit's mean is right but its spread is the outliers': named as the likely cause.
    norm = [f for f in a.flagged("prediction-far") if f.subject == "stationary model (norm)"]
    assert len(norm) == 1
    assert "the data hold outliers (36 of 1200 values" in norm[0].message
    # Table 1 and summary.json agree on the best family, which is in Table 1.
    assert a.best_fit_name in {m.family for m in a.stationary}


def test_a_trace_without_outliers_raises_no_flag() -> None:
    base = synthetic_trace(2, 600, 1, "bcgs", seed=5, base_seconds=2.8e-4)
    a = analyze_trace(base, AnalysisOptions(candidates=FEW))
    assert a.flags == ()


def _collapsing_trace() -> tuple[Trace, np.ndarray]:
    """Two ranks whose spans s_k are normal around 10 us: their S_U fit runs off to a normal."""
    rng = np.random.default_rng(0)
    lower = 3e-4 * (1 + 0.05 * rng.random(1000))
    span = 1e-5 + 1e-7 * rng.standard_normal(1000)
    return trace_from_times(np.vstack([lower, lower + span]), np.array([0, 1])), span


def test_a_collapsed_span_fit_is_detected_flagged_and_simulated_from_its_normal_limit() -> None:
    trace, span = _collapsing_trace()
    measured_span = models.uniform_fits(trace.iteration_seconds).span
    fit = fit_johnsonsu(measured_span)
    assert fit.b > COLLAPSE_B or fit.status == "boundary"  # what the engine does with such data
    assert jsu_collapsed(fit, measured_span)
    a = analyze_trace(trace, AnalysisOptions(candidates=("norm",)))
    assert _codes(a, "JSU fit of s_k") == ["jsu-collapsed"]
    assert _codes(a, "JSU fit of a_k") == []
    message = a.flagged("jsu-collapsed")[0].message
    assert "normal limit" in message
    assert f"a = {fit.a:.3g}" in message
    assert a.parameters is not None
    assert a.parameters.lower_normal is None
    normal = a.parameters.span_normal
    assert normal is not None
    assert normal.mean == pytest.approx(span.mean(), rel=1e-6)
    assert normal.std == pytest.approx(span.std(), rel=1e-4)
    assert a.simulated == pytest.approx(a.measured, rel=0.1)


def test_a_far_monte_carlo_names_the_collapsed_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    trace, _ = _collapsing_trace()
    real = montecarlo.simulate

    def inflated(*args: object, **kwargs: object) -> montecarlo.Simulation:
        sim = real(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(sim, standard=sim.standard * 60.0)

    monkeypatch.setattr(pipeline.montecarlo, "simulate", inflated)
    a = analyze_trace(trace, AnalysisOptions(candidates=("norm",)))
    far = [f for f in a.flagged("prediction-far") if f.subject == "Monte Carlo"]
    assert len(far) == 1
    assert "s_k collapsed to its normal limit" in far[0].message
    assert a.simulated_raw is not None
    assert a.simulated is None  # a failed value is printed nowhere (issue 63)
    assert a.simulated_status.startswith("failed: more than 11× above")
    # 60 times the simulation is a failed prediction: said so, never as a percentage (issue 52)
    assert far[0].message.startswith("failed: more than 11× against the measured KSPSolve")
    assert "%" not in far[0].message


def test_p1_and_one_node_collapse_every_model_to_k_times_the_mean() -> None:
    options = AnalysisOptions(candidates=("norm",), mc_runs=2)
    single = analyze_trace(synthetic_trace(1, 200, 1, "gmres", seed=2), options)
    assert single.count == 1.0
    assert _codes(single, "models") == ["one-node"]
    assert "P = 1" in single.flagged("one-node")[0].message
    node = synthetic_trace(4, 200, 4, "gmres", seed=2)
    shared = analyze_trace(node, dataclasses.replace(options, independent="nodes"))
    assert (shared.n_nodes, shared.count) == (1, 1.0)
    assert "all 4 ranks share one node" in shared.flagged("one-node")[0].message
    norm = shared.model("norm")
    assert norm is not None
    assert norm.standard == pytest.approx(norm.pipelined, rel=1e-9)
    ranks = analyze_trace(node, dataclasses.replace(options, independent="ranks"))
    assert ranks.count == 4.0
    assert ranks.flagged("one-node") == ()


def test_by_default_ranks_are_the_units_on_one_node_and_nodes_on_several() -> None:
    """Issue 30: one default for everyone. A workstation's traces (one node) get N = P, so the
    models keep the wait for the slowest rank; a cluster's get N = their node count."""
    assert AnalysisOptions().independent == "auto"
    assert [units("auto", 1, 4), units("auto", 3, 12), units("nodes", 1, 4),
            units("ranks", 3, 12)] == [4, 3, 1, 12]
    options = AnalysisOptions(candidates=("norm",), mc_runs=2)
    one_node = analyze_trace(synthetic_trace(4, 200, 4, "gmres", seed=2), options)
    assert (one_node.n_nodes, one_node.count) == (1, 4.0)
    assert one_node.flagged("one-node") == ()
    two_nodes = analyze_trace(synthetic_trace(8, 200, 4, "gmres", seed=2), options)
    assert (two_nodes.n_nodes, two_nodes.count) == (2, 2.0)


def test_thirteen_nodes_of_p200_give_n_13_to_every_model_and_the_monte_carlo() -> None:
    trace = synthetic_trace(200, 200, 16, "gmres", seed=4)
    assert np.bincount(trace.node_ids).tolist() == [16] * 12 + [8]
    a = analyze_trace(trace, AnalysisOptions(candidates=("norm",), mc_runs=2))
    assert a.count == 13.0
    assert a.simulation is not None
    assert a.simulation.count == 13
    assert a.n_nodes == 13
    assert a.bounds.count == 13.0
    norm = a.model("norm")
    assert norm is not None
    assert norm.count == 13.0
    assert a.nonstationary.standard == pytest.approx(
        float(models.expected_max_uniform(a.uniform.lower, a.uniform.span, 13).sum())
    )
    ranks = analyze_trace(trace, AnalysisOptions(candidates=("norm",), mc_runs=2,
                                                 independent="ranks"))
    assert ranks.count == 200.0
    assert ranks.simulation is not None
    assert ranks.simulation.count == 200


def test_an_infinite_mean_family_gives_a_flag_not_a_number() -> None:
    trace = synthetic_trace(8, 200, 4, "gmres", seed=3)
    a = analyze_trace(trace, AnalysisOptions(candidates=("cauchy", "norm"), mc_runs=2))
    assert a.model("cauchy") is None
    assert a.model("norm") is not None
    assert _codes(a, "stationary model (cauchy)") == ["infinite-mean"]
    assert "no finite mean" in a.flagged("infinite-mean")[0].message
    assert not any("cauchy" in n for n in a.notes)
    assert a.best_fit_name == "norm"


def test_best_fit_name_is_the_best_family_table1_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = synthetic_trace(8, 200, 4, "gmres", seed=3)
    options = AnalysisOptions(candidates=("lognorm", "norm", "gamma"), mc_runs=2)
    clean = analyze_trace(trace, options)
    assert clean.bulk is not None
    best = clean.bulk.best.name
    assert clean.best_fit_name == best
    real = models.stationary_model

    def diverged(family: str, dist: object, k: int, count: float) -> models.StationaryModel:
        model = real(family, dist, k, count)
        if family == best:  # a fit that did not converge: mean far outside the data
            return dataclasses.replace(model, mean=-1e30, expected_max=-1e30)
        return model

    monkeypatch.setattr(pipeline.models, "stationary_model", diverged)
    a = analyze_trace(trace, options)
    assert a.model(best) is None
    assert a.best_fit_name == next(f.name for f in clean.bulk.fits if f.name != best)


def test_a_far_a_priori_prediction_is_flagged_with_the_source_fit_flags() -> None:
    source = analyze_trace(_outlier_trace(), AnalysisOptions(candidates=("norm",), mc_runs=2))
    assert source.parameters is not None
    target = synthetic_trace(2, 600, 1, "bcgs", seed=6, base_seconds=2.8e-4)
    far = montecarlo.predict(source.parameters, 600, 2, 3 * target.solve_max, False,
                             source.label, target.label, runs=2)
    flag = flags.apriori_flag(source, far)
    assert flag is not None
    assert flag.code == "prediction-far"
    assert flag.subject == f"a priori Monte Carlo from {source.label}"
    assert "the source's JSU fit of a_k is flagged fit-mean-outliers" in flag.message
    close = dataclasses.replace(far, measured=far.simulated * 1.2)
    assert flags.apriori_flag(source, close) is None


def test_a_fit_whose_mean_is_absurd_is_called_failed_without_a_number() -> None:
    """Issue 52: "fitted mean 470 s is 12984737 % above" becomes a failed fit, with no number
    of the fit and no percentage."""
    from ksptrace.studies.variability.run.flags import _mean_flag

    data = np.full(500, 3.6e-3)
    data[:5] = 4e-3
    reasons: dict[str, str] = {}
    flag = _mean_flag("JSU fit of a_k", "the Johnson S_U fit of a_k", 470.0, data, reasons)
    assert flag is not None
    assert flag.message.startswith("the fit failed: its mean is more than 11× the sample mean")
    assert "%" not in flag.message
    assert "470" not in flag.message
    assert "failed" in reasons["JSU fit of a_k"]
