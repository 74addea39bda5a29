"""The findings table, its sentences and every flag as the report shows it (the numbers behind
the flags are tested in test_flags.py; here: that the reader sees them, with their reasons)."""

from __future__ import annotations

import dataclasses
import html
import re

import numpy as np
import pytest

from ksptrace.report.compose import metadata_of, render_html
from ksptrace.studies.variability.conclusions import findings
from ksptrace.studies.variability.pages import tables
from ksptrace.studies.variability.pages.runs import Results, analyse
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats import ks
from ksptrace.studies.variability.stats.choices import HEADLINE_MODEL
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import inject_outliers, synthetic_trace, trace_from_times

FEW = AnalysisOptions(candidates=("johnsonsu", "lognorm", "norm"), mc_runs=2)


def _render(traces: list[Trace], options: AnalysisOptions = FEW) -> tuple[Results, str]:
    res = analyse(traces, options, with_figures=False)
    page = render_html(res, metadata_of(res))
    return res, html.unescape(page)


def _findings_part(page: str) -> str:
    """The main page down to its run table (the answers, then one row per run)."""
    return page[page.index('id="answers"'): page.index('id="methods"')]


def _section(page: str, anchor: str) -> str:
    start = page.index(f'id="{anchor}"')
    end = page.find('<section class="config"', start + 1)
    return page[start: end if end > 0 else page.index('</main>')]


def _shows(page: str, flag: Flag) -> bool:
    """The findings table names the flag (a far prediction with its reason); the run's section
    gives every flag's full message."""
    head, section = _findings_part(page), _section(page, "run-1")
    named = flag.code in head and flag.subject in head
    reason = flag.message in head if flag.code == "prediction-far" else True
    return named and reason and flag.message in section


def test_the_paper_ks_threshold_is_alpha_010_not_005() -> None:
    # c(alpha) * sqrt((n + m) / (n m)) at n = m = 5000: 0.0245 for alpha = 0.10, printed 0.024.
    assert ks.critical_value(0.10) == pytest.approx(1.224, abs=5e-4)
    assert ks.threshold(5000, 5000, 0.10) == pytest.approx(0.0245, abs=5e-5)
    assert round(ks.threshold(5000, 5000, 0.10), 3) == findings.PAPER_THRESHOLD
    assert round(ks.threshold(5000, 5000, 0.05), 3) != findings.PAPER_THRESHOLD
    assert 0.09 < findings.alpha_for_threshold(findings.PAPER_THRESHOLD, 5000, 5000) < 0.12
    note = findings.ks_alpha_note(0.05, 0)
    assert "α = 0.10" in note
    assert "0.0245" in note
    assert "--reference-rank, default 0" in note


def test_times_and_errors_are_formatted_for_a_reader() -> None:
    assert findings.fmt_time(2.5) == "2.5 s"
    assert findings.fmt_time(4.76e-3) == "4.76 ms"
    assert findings.fmt_time(1.2e-5) == "12 µs"
    assert findings.fmt_pct(6106.0) == "+6106\u00a0%"
    assert findings.fmt_pct(-4.04) == "\u22124.0\u00a0%"
    assert findings.fmt_n(1_000_000) == "10⁶"
    assert findings.error_pct(1.5, 1.0) == pytest.approx(50.0)


def _outlier_trace() -> Trace:
    base = synthetic_trace(2, 600, 1, "bcgs", seed=5, base_seconds=2.8e-4)
    times = inject_outliers(base.iteration_seconds, 0.03, 8e-3, 28e-3, seed=1)
    return trace_from_times(times, np.array([0, 1]), ksp="bcgs")


def test_outlier_pulled_fits_and_a_far_prediction_are_flagged_with_reasons() -> None:
    res, page = _render([_outlier_trace()])
    a = res.analysed[0].analysis
    pulled = a.flagged("fit-mean-outliers")
    far = a.flagged("prediction-far")
    assert pulled
    assert far
    head = _findings_part(page)
    for flag in (*pulled, *far):
        assert _shows(page, flag), flag
    assert "more than 50 % off" in head  # the sentences count far predictions
    section = _section(page, "run-1")
    # The pulled fit stays in Table 1 and its row in the models table carries the flag.
    jsu = next(f for f in pulled if f.subject == "stationary model (johnsonsu)")
    assert re.search(r"E\[T\] johnsonsu.*?" + re.escape(jsu.message), section, re.S)
    fits = section[section.index("4. Bulk distribution fits"):]
    assert re.search(r"johnsonsu.*?in Table 1; flagged:<br>" + re.escape(
        f"{jsu.code}: {jsu.message}"), fits, re.S)  # the bulk-fit table
    assert tables.model_table([a]).records()[0]["E_johnsonsu_s"] is not None
    assert "did not converge" not in page


def _collapsing_trace() -> Trace:
    rng = np.random.default_rng(0)
    lower = 3e-4 * (1 + 0.05 * rng.random(1000))
    span = 1e-5 + 1e-7 * rng.standard_normal(1000)
    return trace_from_times(np.vstack([lower, lower + span]), np.array([0, 1]))


def test_a_collapsed_s_k_fit_is_flagged_in_findings_and_the_monte_carlo() -> None:
    res, page = _render([_collapsing_trace()], AnalysisOptions(candidates=("norm",), mc_runs=2))
    (flag,) = res.analysed[0].analysis.flagged("jsu-collapsed")
    assert _shows(page, flag)
    models = _section(page, "run-1")
    assert re.search(r"Monte Carlo \(Johnson S_U a_k, s_k\).*?normal limit", models, re.S)
    assert "± " in models  # the Monte Carlo shows its standard error


def test_p1_says_why_cells_are_empty_and_flags_the_one_node_collapse() -> None:
    res, page = _render([synthetic_trace(1, 200, 1, "gmres", seed=2)])
    row = findings.finding(res.analysed[0].analysis, "run-1")
    assert (row.ks_rejected_pct, row.ks_why) == (None, "P = 1: no rank pairs")
    assert row.within_pct is None
    assert row.nodes_why == "P = 1: no rank pairs"
    head = _findings_part(page)
    # Issue 30: the main page has no column that is empty for every run; the run's page says why.
    assert "P = 1: no rank pairs" not in head
    (flag,) = res.analysed[0].analysis.flagged("one-node")
    assert _shows(page, flag)
    assert "Every run has P = 1" in head
    section = _section(page, "run-1")
    assert "collapses to K·mean" in section
    assert section.count("P = 1: no rank pairs") >= 4  # KS and node tables
    assert "<td></td>" not in page.replace(" ", "")  # no blank cell anywhere


def test_thirteen_nodes_of_p200_show_n_13() -> None:
    res, page = _render([synthetic_trace(200, 60, 16, "gmres", seed=4)],
                        AnalysisOptions(candidates=("norm",), mc_runs=2))
    a = res.analysed[0].analysis
    assert (a.n_nodes, a.count) == (13, 13.0)
    head = _findings_part(page)
    assert re.search(r"<td>200</td><td>13</td>", head)  # P, N
    section = _section(page, "run-1")
    assert "200, 13, 13" in section  # ranks P, nodes, N in the maximum
    assert "on N = 13 units" in section  # the Monte Carlo
    assert "13 node(s), at most 16 ranks each" in section


def test_an_infinite_mean_family_is_flagged_not_modelled() -> None:
    options = AnalysisOptions(candidates=("cauchy", "norm"), mc_runs=2)
    res, page = _render([synthetic_trace(8, 200, 4, "gmres", seed=3)], options)
    a = res.analysed[0].analysis
    (flag,) = a.flagged("infinite-mean")
    assert _shows(page, flag)
    section = _section(page, "run-1")
    assert f"not in Table 1: no model; flagged:<br>{flag.code}: {flag.message}" in section
    assert "E_cauchy_s" not in tables.model_table([a]).frame.columns


def _fake(ksp: str, ks_pct: float | None, nprocs: int = 64, err: float = 1.0) -> findings.Finding:
    return findings.Finding(
        anchor="x", problem="laplace1d", ksp=ksp, n=10**6, nprocs=nprocs, count=4.0, n_nodes=4,
        repetition=1, repetitions=1, file=f"{ksp}.h5", measured=1.0, lockstep_sum=1.0,
        rank_sum_max=1.0,
        best=findings.Prediction("nonstationary", "Ê[T] uniform per k", "", 1.0 + err / 100,
                                 err),
        ks_rejected_pct=ks_pct, ks_why="P = 1: no rank pairs", within_pct=50.0, nodes_why="",
        flags=())


def test_sentences_compare_solvers_and_survive_any_subset() -> None:
    text = " ".join(findings.sentences([_fake("pgmres", 2.0), _fake("gmres", 41.0)]))
    assert "PGMRES's per-iteration times are rank-independent (2.0 % of rank pairs" in text
    assert "while GMRES's are not (41 %)" in text
    assert "No result is flagged." in text
    calm = findings.sentences([_fake("pgmres", 0.0), _fake("gmres", 3.0)])
    assert "KS rejects at most 3.0 % of their rank pairs" in calm[0]
    assert "KS rejects none" in findings.sentences([_fake("gmres", 0.0)])[0]
    one = findings.sentences([_fake("gmres", 41.0, err=-80.0)])
    assert any("ranks differ" in s for s in one)
    assert any("largest miss" in s and "\u221280" in s for s in one)
    assert findings.sentences([_fake("gmres", None, nprocs=1)])[0].startswith("Every run has P")
    assert findings.sentences([]) == ("No result is flagged.",)


def test_the_headline_model_is_chosen_before_the_measurement_is_seen() -> None:
    """Issue 30: the model the findings and Table 1 quote does not depend on the measured
    KSPSolve. Permuting the measurements between runs (and scaling them) leaves every run's
    chosen model as it was, where the closest model would change."""
    options = AnalysisOptions(candidates=("norm", "lognorm"), mc_runs=2)
    runs = [analyze_trace(synthetic_trace(p, 120, 4, ksp, seed=p), options)
            for p, ksp in ((4, "gmres"), (8, "gmres"), (8, "pgmres"), (16, "cg"))]
    chosen = [findings.headline(a) for a in runs]
    assert all(c is not None and c.key == HEADLINE_MODEL and not c.is_bound for c in chosen)
    measured = [a.measured for a in runs]
    closest_before = [min((p for p in findings.predictions(a) if p.error_pct is not None
                           and not p.is_bound), key=lambda p: abs(p.error_pct or 0)).key
                      for a in runs]
    changed_closest = False
    for shift in range(1, len(runs)):
        for factor in (0.5, 1.0, 3.0):
            moved = [dataclasses.replace(a, measured=factor * measured[(i + shift) % len(runs)])
                     for i, a in enumerate(runs)]
            assert [(h := findings.headline(a)) and h.key for a in moved] == [
                c.key for c in chosen if c is not None]
            assert [findings.finding(a, f"run-{i}").best.name  # type: ignore[union-attr]
                    for i, a in enumerate(moved)] == [c.name for c in chosen if c is not None]
            closest = [min((p for p in findings.predictions(a) if p.error_pct is not None
                            and not p.is_bound), key=lambda p: abs(p.error_pct or 0)).key
                       for a in moved]
            changed_closest |= closest != closest_before
    assert changed_closest, "the permutations never changed the closest model: a weak test"


def test_p1_sentence_names_the_clean_runs_when_flagged_runs_are_left_out() -> None:
    """Beside a busy process every P = 2 run of the demo was flagged: the answer is about the
    clean P = 1 runs, and says so instead of "every run has P = 1"."""
    import dataclasses

    from ksptrace.studies.variability.conclusions import answers
    from ksptrace.studies.variability.run.flags import Flag
    from ksptrace.studies.variability.run.pipeline import analyze_trace

    one = analyze_trace(synthetic_trace(1, 200, 1, "gmres", seed=2))
    two = analyze_trace(synthetic_trace(2, 200, 2, "gmres", seed=3))
    flag = Flag(code="machine-loaded", subject="measurement", message="foreign CPU 60 %")
    loaded = dataclasses.replace(two, flags=(*two.flags, flag))
    text = " ".join(answers.variability([one, loaded]).sentences)
    assert "Every clean run has P = 1 (1 flagged run left out)" in text
    assert "Every run has P = 1" in " ".join(answers.variability([one]).sentences)
