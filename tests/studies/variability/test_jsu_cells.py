"""Johnson S_U fits in tables (issue 52): a fit at a limit of the family, or one that failed,
is shown as such, never as parameters that mean nothing there; times at the clock's
resolution."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.variability.pages import jsu_cells
from ksptrace.studies.variability.pages.tables import jsu_table, scaling_table
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats.fitting import JohnsonSU
from ksptrace.studies.variability.stats.montecarlo import NormalLimit, ParameterFits
from ksptrace.trace.synthetic import synthetic_trace

ORDINARY = JohnsonSU(a=-1.0, b=2.0, loc=1.000000123456e-4, scale=2.0000004e-5)
# a real fit of a demo-like run's a_k (the across page printed "24.27 | 2.067 | 686.2 µs | 3 ns")
RIDGE = JohnsonSU(a=24.268407021472942, b=2.067347856044065, loc=6.862470517653579e-4,
                  scale=2.7201738073622082e-09)


@pytest.mark.parametrize(("a", "b"), [(-1.0, 2.0), (0.5, 1.0), (-3.0, 10.0), (4.0, 1.5)])
def test_the_scale_share_is_the_scale_over_the_distributions_spread(a: float, b: float) -> None:
    fit = JohnsonSU(a=a, b=b, loc=0.0, scale=1.0)
    assert jsu_cells.scale_share(fit) == pytest.approx(1.0 / st.johnsonsu(a, b).std(), rel=1e-9)


def test_each_form_of_a_fit() -> None:
    assert jsu_cells.form(ORDINARY, None) == jsu_cells.JSU
    assert jsu_cells.form(RIDGE, None) == jsu_cells.LOGNORMAL
    assert jsu_cells.scale_share(RIDGE) < 1e-4
    assert jsu_cells.scale_share(JohnsonSU(a=-1e8, b=3.0, loc=0.0, scale=1.0)) == 0.0  # no overflow
    assert jsu_cells.form(RIDGE, NormalLimit(7e-4, 1e-4)) == jsu_cells.NORMAL
    failed = dataclasses.replace(ORDINARY, status="not converged")
    assert jsu_cells.form(failed, None) == "failed (not converged)"
    assert jsu_cells.form(dataclasses.replace(ORDINARY, scale=math.nan), None).startswith("failed")


def test_cells_say_the_form_and_round_times_to_the_clock() -> None:
    fits = ParameterFits(lower=RIDGE, span=ORDINARY)
    csv = jsu_cells.csv_cells(fits)
    assert csv["a_k_fit"] == "lognormal limit"
    assert csv["a_k_a"] is None
    assert csv["a_k_scale_s"] is None
    assert csv["a_k_b"] == RIDGE.b
    assert csv["a_k_loc_s"] == 6.86247e-4  # whole nanoseconds
    assert csv["s_k_fit"] == "Johnson S_U"
    assert (csv["s_k_loc_s"], csv["s_k_scale_s"]) == (1.0e-4, 2.0e-5)
    shown = jsu_cells.shown_cells(fits)
    assert (shown["a_k_a"], shown["a_k_scale"]) == ("—", "—")
    assert shown["a_k_loc"] == "686.2 µs"
    normal = jsu_cells.shown_cells(ParameterFits(RIDGE, RIDGE, span_normal=NormalLimit(
        7.5152e-5, 1.58479e-4)))
    assert (normal["s_k_a"], normal["s_k_b"], normal["s_k_loc"], normal["s_k_scale"]) == (
        "—", "—", "75.15 µs", "158.5 µs")
    assert jsu_cells.shown_cells(None)["a_k_a"] == "no fit"


def test_the_page_across_configurations_shows_limits_not_their_parameters() -> None:
    opt = AnalysisOptions(candidates=("johnsonsu", "norm"), mc_runs=2)
    runs = [analyze_trace(synthetic_trace(p, 60, 2, "gmres", seed=p, n=10_000), opt)
            for p in (2, 4, 8)]
    limits = [ParameterFits(RIDGE, ORDINARY),
              ParameterFits(ORDINARY, RIDGE, span_normal=NormalLimit(7.5e-5, 1.6e-4)),
              ParameterFits(dataclasses.replace(ORDINARY, status="degenerate"), ORDINARY)]
    runs = [dataclasses.replace(a, parameters=p) for a, p in zip(runs, limits, strict=True)]
    table = scaling_table(runs, "P")
    page = table.to_html()
    assert "3 ns" not in page  # RIDGE's scale
    assert "24.27" not in page  # RIDGE's a
    for said in ("lognormal limit", "normal limit", "failed (degenerate)"):
        assert said in page
    assert table.notes == (jsu_cells.NOTES["normal limit"], jsu_cells.NOTES["lognormal limit"])
    records = table.records()
    assert [r["a_k_fit"] for r in records] == ["lognormal limit", "Johnson S_U",
                                               "failed (degenerate)"]
    assert records[2]["a_k_a"] is None
    assert np.isclose(records[1]["s_k_loc_s"], 7.5e-5)
    run_page = jsu_table(runs[0]).to_html()
    assert "lognormal limit" in run_page
    assert jsu_table(runs[0]).notes == (jsu_cells.NOTES["lognormal limit"],)
    assert "3 ns" not in run_page


def test_the_scaling_figure_draws_no_shape_a_at_the_lognormal_limit() -> None:
    from ksptrace.studies.variability.pages.figures import ScalingPoint, scaling

    points = [ScalingPoint(2.0, 5e-4, 1e-4, ORDINARY, ORDINARY),
              ScalingPoint(4.0, 5e-4, 1e-4, RIDGE, ORDINARY)]
    fig = scaling(points, "P")
    lines = {ln.get_label(): ln for ax in fig.axes for ln in ax.get_lines()}
    assert list(lines["shape $a$ of $a_k$"].get_xdata()) == [2.0]
    assert list(lines["shape $b$ of $a_k$"].get_xdata()) == [2.0, 4.0]
    assert list(lines["shape $a$ of $s_k$"].get_xdata()) == [2.0, 4.0]
