"""Figures and numbers a reader can read (issue 52): at least three labelled ticks inside the
data's range on log axes, no empty panel, numeric order, no digit below the clock's
resolution, no label drawn over another, and words that match the numbers."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from ksptrace.studies import drawing
from ksptrace.studies.collectives import reductions as rd
from ksptrace.studies.decisions.figures import depth_axes, merged_labels
from ksptrace.studies.decisions.grouping import Run, build_studies
from ksptrace.studies.segmentation.segment import Segment, Segmentation
from ksptrace.studies.variability.conclusions.findings import fmt_time
from ksptrace.studies.variability.pages.figures import axes as time_axes
from ksptrace.studies.variability.pages.figures.across_runs import ScalingPoint, scaling
from ksptrace.studies.variability.pages.tables import scaling_table
from ksptrace.studies.variability.stats.fitting import JohnsonSU
from tests.studies.variability.test_ranking import _run


def _labels(view: tuple[float, float], which: str = "x") -> list[str]:
    fig = drawing._figure(height=2.5)
    ax = fig.add_subplot()
    ax.plot(view, view)
    time_axes.log_time_ticks(ax, which)
    (ax.set_xlim if which == "x" else ax.set_ylim)(*view)
    fig.canvas.draw()
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = view
    return [t.get_text() for t in axis.get_majorticklabels()
            if t.get_text() and lo * (1 - 1e-9) <= t.get_position()[0 if which == "x" else 1]
            <= hi * (1 + 1e-9)]


@pytest.mark.parametrize("view", [(2.0, 5.0), (6e-5, 4e-4), (3e-4, 5e-4), (1.5e-4, 9e-3),
                                  (1e-6, 1e-3), (2e-9, 7.6e-6)])
def test_a_log_time_axis_labels_at_least_three_ticks_in_view(view: tuple[float, float]) -> None:
    """matplotlib alone labels 2-5 s not at all and 60-400 µs only at "100 µs"."""
    for which in ("x", "y"):
        shown = _labels(view, which)
        assert len(shown) >= 3, (view, which, shown)
        assert len(set(shown)) == len(shown), shown  # no two ticks print the same text


def _jsu() -> JohnsonSU:
    return JohnsonSU(a=-1.0, b=2.0, loc=1e-4, scale=2e-5)


def test_a_scaling_figure_leaves_out_panels_with_nothing_to_show() -> None:
    moments = [ScalingPoint(x, 1e-4 * x, 1e-5, None, None) for x in (1e4, 3e4, 1e5)]
    fig = scaling(moments, "n")
    assert len(fig.axes) == 1  # no "no fit" panel: the moments alone
    lower = [dataclasses.replace(p, lower=_jsu()) for p in moments]
    assert len(scaling(lower, "n").axes) == 3  # moments, shapes, a_k (s_k = 0 at P = 1)
    both = [dataclasses.replace(p, span=_jsu()) for p in lower]
    assert len(scaling(both, "n").axes) == 4
    for f in (fig, scaling(lower, "n")):
        assert not any("no Johnson" in t.get_text() for ax in f.axes for t in ax.texts)


def test_tables_across_runs_sort_n_as_numbers() -> None:
    runs = [_run("gmres", n, p, 1.0) for n, p in itertools.product((100000, 30000, 10000), (1, 2))]
    table = scaling_table(runs, "P").records()
    assert [r["n"] for r in table] == [10000, 10000, 30000, 30000, 100000, 100000]


def test_times_are_never_printed_below_the_clocks_resolution() -> None:
    assert fmt_time(4.409e-13) == "< 1 ns"  # was "0.0004409 µs"
    assert fmt_time(-4e-13) == "-< 1 ns"
    assert fmt_time(12.34e-9) == "12 ns"
    assert fmt_time(1.2345e-6) == "1.234 µs" or fmt_time(1.2345e-6) == "1.235 µs"
    assert time_axes.fmt_time(3.4e-10) == "< 1 ns"
    assert time_axes.fmt_time(56.7e-9) == "57 ns"


def test_labels_of_limits_that_give_one_tree_are_merged_and_never_overlap() -> None:
    merged = merged_labels([(0.0, 20.9, "0.4"), (0.0, 20.9, "0.5"), (0.0, 20.9, "0.6"),
                            (1.0, 14.6, "0.1"), (1.6, 0.0, "0.05"), (1.6, 0.0, "0.01")])
    assert merged == [(0.0, 20.9, "0.4–0.6"), (1.0, 14.6, "0.1"), (1.6, 0.0, "0.05, 0.01")]
    rng = np.random.default_rng(0)
    runs = [Run({"nprocs": p, "n": n, "ksp": k, "problem": "lap", "pc": "jacobi",
                 "iterations": 10, "noise": "none"}, float(rng.uniform(1, 2)))
            for p, n, k in itertools.product((1, 2, 4, 8), (1e3, 1e4, 1e5, 1e6), ("a", "b", "c"))]
    fig = depth_axes(build_studies(runs).studies[0])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) >= 2
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)


def test_a_global_split_after_homogeneous_windows_does_not_say_there_were_none() -> None:
    p = np.array([1.0, 2, 3, 4, 5, 6, 7, 8])
    seg = Segmentation(p=p, y=p, single=None, segmented=True, change_points=(),
                       segments=(Segment(p, p, None),), pattern="1000", by_split=True)
    text = seg.describe()
    assert "window pattern 1000: segmented (the homogeneous windows (0s) placed no change" in text
    assert "no homogeneous window" not in text
    assert "no homogeneous window" in dataclasses.replace(seg, pattern="1111").describe()


def test_the_reductions_line_says_why_its_mean_iteration_is_not_shows() -> None:
    t = np.array([[1e-3, 1e-3], [3e-3, 3e-3]])  # the slowest rank's mean is 3 ms, every rank's 2
    said = rd.reduction_share(t, np.array([1e-6, 2e-6]), 2, "cg").describe()
    assert "mean iteration of the slowest rank (mean over k of max_p T: 3000.00 us" in said
    assert "every rank's mean, ksptrace show's mean_iteration, is 2000.00 us" in said
