"""The figures: bulk spread over the axis, units, real iteration numbers, no degenerate plots."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ksptrace.errors import AnalysisError
from ksptrace.studies import drawing
from ksptrace.studies.variability.pages import figures
from ksptrace.studies.variability.stats import ks
from ksptrace.studies.variability.stats.fitting import JohnsonSU, fit_candidates
from ksptrace.studies.variability.stats.models import uniform_fits


def long_tailed(size: int = 3000, seed: int = 1) -> np.ndarray:
    """A bulk near 10 µs and a few millisecond detours, as s_k of a real trace."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(np.log(10e-6), 0.3, size)
    x[rng.choice(size, 6, replace=False)] = rng.uniform(1e-3, 3.5e-3, 6)
    return x


def bulk_share(ax: Axes, values: np.ndarray, scale: float) -> float:
    """Where the 99th percentile of ``values`` (in the axis unit) sits on the x axis (0..1)."""
    lo, hi = ax.get_xlim()
    return (float(np.quantile(values, 0.99)) / scale - lo) / (hi - lo)


def test_long_tailed_histograms_give_the_bulk_a_third_of_the_axis() -> None:
    x = long_tailed()
    fits = uniform_fits(np.vstack([np.full_like(x, 1e-4), 1e-4 + x]))  # s_k = x exactly
    fig = figures.uniform_parameters(fits, None, panels=("span",))
    (span_ax,) = fig.axes
    assert "µs" in span_ax.get_xlabel()
    assert span_ax.get_ylabel() == "density (1/µs)"
    assert bulk_share(span_ax, x, 1e-6) > 1 / 3

    ranking = fit_candidates(x, ("norm", "lognorm"), fit_size=2000)
    axis = figures.time_axis(x)
    fig = figures.bulk_fit(ranking, values=x, axis=axis)
    assert bulk_share(fig.axes[0], x, axis.scale) > 1 / 3
    assert axis.clip_quantile is not None
    assert axis.beyond >= 1
    text = axis.describe()
    assert "percentile" in text
    assert "lie beyond" in text
    assert "ms" in text  # the largest value, a millisecond detour


def test_short_tailed_values_keep_the_whole_range() -> None:
    x = np.random.default_rng(2).uniform(1e-3, 2e-3, 1000)
    axis = figures.time_axis(x)
    assert axis.clip_quantile is None
    assert axis.beyond == 0
    assert axis.unit == "ms"
    assert "every value" in axis.describe()


def test_time_axis_refuses_constant_values() -> None:
    with pytest.raises(AnalysisError, match="one bar"):
        figures.time_axis(np.full(10, 3e-4))
    assert figures.is_constant(np.array([1e-4, 1e-4 * (1 + 1e-12)]))
    assert not figures.is_constant(np.array([1e-4, 1.01e-4]))


def test_densities_are_per_unit_and_integrate_to_one_when_nothing_is_clipped() -> None:
    x = np.random.default_rng(3).normal(5e-4, 5e-5, size=(2, 4000))
    fig = figures.rank_histograms(x, (0, 1))
    ax = fig.axes[0]
    assert ax.get_xlabel() == "iteration time $T_p^k$ (µs)"
    for patch in ax.patches:
        path = patch.get_path().vertices
        widths = np.diff(np.unique(path[:, 0]))
        heights = np.unique(path[:, 1])
        assert widths.size > 10
        assert heights.max() < 1.0
    area = 0.0
    for artist in ax.patches[:1]:
        v = artist.get_path().vertices
        xs, ys = v[1:-1:2, 0], v[1:-1:2, 1]
        area = float(np.sum(ys[:-1] * np.diff(xs)))
    assert area == pytest.approx(1.0, rel=0.05)


def test_rank_histograms_name_each_rank_once() -> None:
    x = np.random.default_rng(4).uniform(1.0, 2.0, size=(1, 50))
    fig = figures.rank_histograms(x, (0, 0))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["rank 0"]


def test_colormap_labels_rows_with_the_real_iteration_numbers() -> None:
    x = np.random.default_rng(5).uniform(1e-4, 2e-4, size=(8, 300))
    chosen = np.arange(14, 300, 30)
    fig = figures.colormap(x, chosen)
    fig.canvas.draw()
    ax = fig.axes[0]
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert shown, "the colormap has no iteration labels"
    assert set(shown) <= {str(k) for k in chosen}
    assert "14" in shown
    lo, hi = figures.colour_limits(x, chosen)
    assert np.quantile(x[:, chosen], 0.01) == pytest.approx(lo)
    assert np.quantile(x[:, chosen], 0.99) == pytest.approx(hi)


def test_uniform_fits_skip_constant_columns_and_keep_a_sensible_y_limit() -> None:
    rng = np.random.default_rng(6)
    x = rng.uniform(1e-4, 2e-4, size=(16, 5))
    x[:, 2] = 1.5e-4  # s_k = 0: the old figure drew a density of 1e300
    fig = figures.uniform_fits(x, [2, 3])
    ax = fig.axes[0]
    top = ax.get_ylim()[1]
    assert np.isfinite(top)
    assert top < 1.0  # per µs: a uniform over ~100 µs has density ~0.01/µs
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 1
    assert "k = 3" in labels[0]
    with pytest.raises(AnalysisError, match="s_k = 0"):
        figures.uniform_fits(x, [2])


def test_rank_scatter_on_one_node_has_one_panel_and_visible_markers() -> None:
    x = np.random.default_rng(7).uniform(1e-4, 2e-4, size=(12, 10))
    fig = figures.iteration_vs_rank(x, 4, np.zeros(12, dtype=np.int64))
    assert len(fig.axes) == 1
    (line,) = fig.axes[0].get_lines()
    assert line.get_markersize() >= 3
    fig = figures.iteration_vs_rank(x, 4, np.arange(12) // 4)
    assert len(fig.axes) == 2


def test_ks_heatmap_hatches_exactly_the_rejected_pairs_and_marks_the_threshold() -> None:
    rng = np.random.default_rng(8)
    x = rng.normal(1.0, 0.1, size=(10, 300))
    x[[3, 7]] += 0.1
    res = ks.pairwise(x)
    fig = figures.ks_heatmap(res)
    heat, bar = fig.axes[0], fig.axes[1]
    hatched = [c for c in heat.collections if c.get_hatch()]
    assert len(hatched) == 1
    cells = np.ma.count(hatched[0].get_array())
    assert cells == int(res.rejected.sum()) > 0
    red = [ln for ln in bar.get_lines() if ln.get_color() == "red"]
    assert red
    assert red[0].get_ydata()[0] == pytest.approx(res.threshold)


def test_figures_fit_the_report_column() -> None:
    x = np.random.default_rng(9).uniform(1e-4, 2e-4, size=(4, 40))
    fig: Figure = figures.rank_histograms(x, (0, 1))
    png = drawing.to_png(fig)
    width = int.from_bytes(png[16:20], "big")
    assert 900 <= width <= 1100


def test_a_bulk_and_a_tail_orders_of_magnitude_apart_get_a_log_axis() -> None:
    """As in real traces: 85 % of T near 120 µs, 15 % of 16-80 ms detours, a few s_k = 0."""
    rng = np.random.default_rng(10)
    x = np.concatenate([
        rng.lognormal(np.log(120e-6), 0.4, 850), rng.uniform(16e-3, 80e-3, 150), np.zeros(5),
    ])
    axis = figures.time_axis(x)
    assert axis.log
    assert axis.nonpositive == 5
    assert "Logarithmic" in axis.describe()
    assert "5 values below 1 ns" in axis.describe()
    fig = figures.rank_histograms(x[None, :], (0,), axis=axis)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert ax.get_ylabel() == "density per decade"
    lo, hi = np.log10(ax.get_xlim())
    where = (np.log10(np.median(x)) - lo) / (hi - lo)
    assert 0.1 < where < 0.9
    fig.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "1 ms" in ticks
    (stairs,) = ax.patches
    v = stairs.get_path().vertices
    xs, ys = v[1:-1:2, 0], v[1:-1:2, 1]
    area = float(np.sum(ys[:-1] * np.diff(np.log10(xs))))
    assert area == pytest.approx(1000 / 1005, rel=0.02)


def test_two_modes_decades_apart_get_a_log_axis_even_when_the_tail_is_half() -> None:
    """As iceflow GMRES on two ranks: half the iterations near 1 ms, half at 20-120 ms."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.lognormal(np.log(0.9e-3), 0.2, 550), rng.uniform(20e-3, 120e-3, 450)])
    axis = figures.time_axis(x)
    assert axis.log
    fig = figures.rank_histograms(x[None, :], (0,), axis=axis)
    (stairs,) = fig.axes[0].patches
    heights = stairs.get_path().vertices[:, 1]
    # on a linear axis the fast mode was one bar 10x taller than anything else; here the
    # slow mode's peak is within a factor 10 of the fast one's
    fast, slow = np.log10(2e-3), np.log10(20e-3)
    xs = np.log10(stairs.get_path().vertices[:, 0])
    assert heights[xs > slow].max() > heights[xs < fast].max() / 10


@pytest.mark.parametrize("tail_share", [0.02, 0.07, 0.15, 0.45])
def test_the_median_is_never_squeezed_into_the_left_tenth(tail_share: float) -> None:
    """A bulk near 0.3 ms with a share of 4-12 ms detours, as laplace1d GMRES on one rank."""
    rng = np.random.default_rng(12)
    n_tail = int(2000 * tail_share)
    x = np.concatenate([rng.lognormal(np.log(3e-4), 0.5, 2000 - n_tail),
                        rng.uniform(4e-3, 12e-3, n_tail)])
    axis = figures.time_axis(x)
    fig = figures.rank_histograms(x[None, :], (0,), axis=axis)
    lo, hi = fig.axes[0].get_xlim()
    med = float(np.median(x)) / axis.scale
    where = (np.log(med / lo) / np.log(hi / lo)) if axis.log else (med - lo) / (hi - lo)
    assert where > 0.1


def test_scaling_draws_heavy_tailed_jsu_fits_on_a_log_axis_and_narrow_ones_linearly() -> None:
    heavy = JohnsonSU(a=-0.64, b=0.33, loc=1e-4, scale=1e-5)  # as real a_k: 0.1 ms to 90 ms
    narrow = JohnsonSU(a=-1.0, b=3.0, loc=5e-4, scale=1e-4)
    points = [figures.ScalingPoint(x=p, mean=1e-3, std=2e-4, lower=heavy, span=narrow)
              for p in (2.0, 8.0)]
    fig = figures.scaling(points, "P")
    lower_ax, span_ax = fig.axes[2], fig.axes[3]
    assert lower_ax.get_xscale() == "log"
    assert lower_ax.get_ylabel() == "Johnson $S_U$ density per decade"
    assert span_ax.get_xscale() == "linear"
    assert span_ax.get_xlabel() == "$s_k$ (µs)"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["2", "8"]


def test_a_figure_with_nothing_labelled_draws_no_legend_and_warns_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import logging

    import matplotlib.pyplot as plt

    from ksptrace.studies.variability.pages.figures.axes import legend

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])  # no label
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logging.getLogger("matplotlib").setLevel(logging.WARNING)
        legend(ax)
    assert ax.get_legend() is None
    ax.plot([0, 1], [1, 0], label="x")
    legend(ax)
    assert ax.get_legend() is not None
    plt.close(fig)
    assert "No artists" not in capsys.readouterr().err


@pytest.mark.parametrize("log", [False, True])
def test_blocked_counts_equal_one_histogram_of_everything(
    log: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ksptrace.studies.variability.pages.figures import axes as fig

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.lognormal(-7, 1.5, 10_007), [0.0, -1.0, 1e-12, 5.0, 1e4]])
    lo, hi = (-9.0, 2.0) if log else (0.0, 0.01)
    whole, _ = np.histogram(np.log10(np.maximum(x, 1e-300)) if log else x, bins=37,
                            range=(lo, hi))
    monkeypatch.setattr(fig, "HISTOGRAM_BLOCK", 1000)
    blocked, below = fig.binned_counts(np.maximum(x, 1e-300) if log else x, 37, lo, hi,
                                       log=log)
    assert np.array_equal(blocked, whole)
    assert below == 0
    counts, below = fig.binned_counts(x, 37, lo, hi, log=log, floor=1e-9)
    assert below == int((x < 1e-9).sum())
    assert counts.sum() <= x.size - below
