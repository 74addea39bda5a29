"""Injected noise against the known truth and the models, on traces whose truth is known."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest

from ksptrace.noise.spec import parse
from ksptrace.report.compose import write_report
from ksptrace.studies.noise import compare as noise_compare
from ksptrace.studies.noise import entry as noise_entry
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.studies.variability.stats.injected import noise_truth
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import trace_from_times

P, K = 4, 400
SPEC = "exponential:scale=1ms,p=0.2,seed=3"
OPTIONS = AnalysisOptions(independent="ranks", mc_runs=4)


def natural(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 1e-3 * (1.0 + 0.05 * rng.gamma(2.0, 1.0, (P, K)))


def detours(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    hit = rng.random((P, K)) < 0.2
    return np.where(hit, rng.exponential(1e-3, (P, K)), 0.0)


def run(ksp: str, noise: str, seed: int) -> Trace:
    """A run whose times are natural + detours; lockstep KSPSolve for a standard method."""
    x = natural(seed)
    d = detours(seed + 100) if noise != "none" else None
    t = trace_from_times(x if d is None else x + d, ksp=ksp, seed=seed)
    attrs = {**t.attrs, "noise": parse(noise).text(), "problem": "synthetic"}
    return dataclasses.replace(t, attrs=attrs, injected_seconds=d,
                               path=f"/x/{ksp}_{noise.partition(':')[0]}.h5")


@functools.cache
def _analyses() -> tuple[TraceAnalysis, ...]:
    return tuple(analyze_trace(run(ksp, noise, seed), OPTIONS)
                 for seed, ksp in ((1, "gmres"), (2, "pgmres"))
                 for noise in ("none", SPEC))


def analyses() -> list[TraceAnalysis]:
    """The four analyses (computed once: they are frozen, and the suite has a time budget)."""
    return list(_analyses())


def test_each_noisy_run_meets_its_known_truth_and_the_standard_method_pays_more() -> None:
    result = noise_compare.compare(analyses())
    assert len(result.rows) == 2
    assert not result.notes
    by = {r.ksp: r for r in result.rows}
    for r in result.rows:
        assert r.truth_source == "noise-free run"
        assert r.baseline is not None
        assert r.slowdown_pct is not None
        assert r.slowdown_pct > 0
        # One run of K = 400 iterations: its sum of maxima has a standard deviation of 2.8 %
        # around the truth (0.020 s of 0.73 s, by simulation); 3.2 sigma.
        assert abs(r.error(r.truth) or 0) < 9.0, r
        seed = 1 if r.ksp == "gmres" else 2
        assert r.injected_mean == pytest.approx(detours(seed + 100).mean(), rel=1e-12)
        assert r.count == P
    # Standard: K E[max of 4 of X + D]; pipelined: K (E[X] + p E[D]).
    std, pip = by["gmres"], by["pgmres"]
    assert std.slowdown_pct > 2 * pip.slowdown_pct  # type: ignore[operator]
    assert pip.truth == pytest.approx(K * (natural(2).mean() + 0.2e-3), rel=0.01)
    (pair,) = result.pairs
    assert pair.standard is std
    assert pair.pipelined is pip
    assert pair.measured_gap is not None
    assert pair.measured_gap > 0
    # The measured gap carries the standard run's 0.020 s deviation; 3.2 sigma.
    assert pair.truth_gap == pytest.approx(pair.measured_gap, abs=0.065)
    assert pair.truth_gap > 0.1
    # The pipelined model K mu is exact for a pipelined run's own timings.
    assert pip.k_mu == pytest.approx(pip.measured - 1e-3, rel=0.02)
    # Inside each run: the standard method paid about every iteration's slowest detour, the
    # (ideally decoupled) pipelined one about each rank's own sum of detours.
    assert std.detour_cost_ratio == pytest.approx(1.0, abs=0.2)
    hidden = pip.injected_rank_max / pip.injected_lockstep
    assert hidden < 0.5
    assert pip.detour_cost_ratio == pytest.approx(hidden, abs=0.15)
    # The ks share and the models are carried through as the analysis gave them.
    assert std.ks_rejected_pct is not None
    assert std.montecarlo is not None


def test_without_a_noise_free_run_the_truth_uses_the_run_minus_its_detours() -> None:
    a = analyze_trace(run("pgmres", SPEC, 2), OPTIONS)
    result = noise_compare.compare([a])
    (row,) = result.rows
    assert row.baseline is None
    assert row.slowdown_pct is None
    assert row.truth_source == "this run minus its detours"
    assert "no noise-free run" in result.notes[0]
    assert row.truth == pytest.approx(
        noise_truth(natural(2), parse(SPEC), P, K).pipelined, rel=1e-3)
    assert not result.pairs


def test_noise_free_runs_give_no_noise_rows() -> None:
    plain = [a for a in analyses() if not a.noisy]
    assert len(plain) == 2
    assert noise_compare.compare(plain).rows == ()


def test_runs_with_different_noise_are_different_configurations() -> None:
    from ksptrace.studies.variability.pages.runs import config_key

    a, b = (analyze_trace(run("gmres", n, 1), OPTIONS) for n in ("none", SPEC))
    assert config_key(a) != config_key(b)


def test_the_report_has_the_noise_section_and_its_csv(tmp_path: Path) -> None:
    traces = [run(ksp, noise, seed) for seed, ksp in ((1, "gmres"), (2, "pgmres"))
              for noise in ("none", SPEC)]
    report = write_report(tmp_path / "r", traces, OPTIONS, with_figures=False)
    main = report.html.read_text()
    assert main.count('id="q-noise"') == 1  # the question, answered on the main page
    assert "GMRES against PGMRES: GMRES slowed down more than PGMRES in 1 of 1" in main
    assert 'href="studies/noise.html"' in main
    assert "noise exponential scale=1ms p=0.2" in main  # the run table says which noise
    page = (tmp_path / "r" / "studies" / "noise.html").read_text()
    assert page.count('id="noise"') == 1
    assert "Injected noise: prediction vs measurement" in page
    assert "inside its runs, GMRES paid 0.95 × Σₖ maxₚ D of its detours and PGMRES 0.33 ×" in page
    assert "KS told ranks apart in" in page
    noise_csv = (tmp_path / "r" / "noise.csv").read_text().splitlines()
    assert len(noise_csv) == 3
    assert "err_pct_truth" in noise_csv[0]
    assert (tmp_path / "r" / "noise_pairs.csv").is_file()


def test_a_report_without_noise_has_no_noise_section(tmp_path: Path) -> None:
    report = write_report(tmp_path / "r", [run("gmres", "none", 1)], OPTIONS,
                          with_figures=False)
    assert 'id="q-noise"' not in report.html.read_text()
    assert not (tmp_path / "r" / "studies").exists()
    assert not (tmp_path / "r" / "noise.csv").exists()


def test_a_noise_naming_no_rank_of_its_run_is_left_out_with_a_note(tmp_path: Path) -> None:
    """Issue 50: ranks=5 at P = 4 detoured nowhere; the study of the set then stopped on
    "N must be >= 1, got 0" and no report was written for any trace."""
    idle = run("gmres", "fixed:value=1ms,ranks=5", 7)
    idle = dataclasses.replace(idle, injected_seconds=np.zeros((P, K)),
                               path="/x/gmres_idle.h5")
    alone = analyze_trace(idle, OPTIONS)
    assert alone.injection is None
    note = [n for n in alone.notes if "no noise analysis" in n]
    assert note == ["noise 'fixed:value=1ms,p=1,per=rank,seed=0,ranks=5' detours on no rank "
                    "of the run: it names rank 5, but the run has 4 ranks, numbered from 0: "
                    "no noise analysis"]
    result = noise_entry.study([*analyses(), alone], OPTIONS, with_figures=False)
    assert result is not None
    rows = noise_compare.compare([*analyses(), alone]).rows
    assert len(rows) == len(noise_compare.compare(analyses()).rows)


def test_a_negative_in_run_detour_cost_is_cannot_tell_with_the_load() -> None:
    """Issue 52: a cost below zero is a failed estimate: no number, the reason and the load."""
    import dataclasses

    from ksptrace.studies.noise.tables import noise_table

    (row,) = noise_compare.compare([analyze_trace(run("gmres", SPEC, 2), OPTIONS)]).rows
    failed = dataclasses.replace(row, detour_cost=-804e-6 * K, loaded=True)
    assert failed.cost_failed
    assert failed.detour_cost_ratio is None
    table = noise_table(noise_compare.NoiseComparison((failed,), (), ()))
    (record,) = table.records()
    assert record["detour_cost_s"] is None
    assert record["detour_cost_ratio"] is None
    assert table.display is not None
    (cell,) = list(table.display["detours cost (in-run)"])
    assert cell.startswith("cannot tell: the estimate came out below zero")
    assert cell.endswith("the machine was loaded during the run")
