"""Which figures a trace gets: no degenerate plot, a stated reason for each one left out."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

from ksptrace.errors import AnalysisError
from ksptrace.studies import drawing
from ksptrace.studies.variability.pages import across_sets, collector, figure_sets
from ksptrace.studies.variability.pages.collector import Collector
from ksptrace.studies.variability.pages.digest import FigureSet, TraceDigest, digest_of
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import inject_outliers, synthetic_trace, trace_from_times

LIGHT = AnalysisOptions(mc_runs=2, candidates=("norm", "lognorm"), fit_size=1000)
RANK_PAIR_KEYS = {"rank-histograms", "ks-heatmap", "iteration-vs-rank", "colormap"}


def drawn(trace: Trace) -> tuple[TraceAnalysis, FigureSet]:
    a = analyze_trace(trace, LIGHT)
    return a, figure_sets.trace_figures(trace, a)


def png_width(png: bytes) -> int:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big")


def test_one_rank_draws_no_rank_pair_figure_and_says_so() -> None:
    _, fs = drawn(synthetic_trace(nprocs=1, iterations=200, ranks_per_node=1))
    keys = {d.key for d in fs.drawn}
    assert not keys & (RANK_PAIR_KEYS | {"uniform-fits"})
    assert {"bulk-fit", "uniform-parameters"} <= keys
    assert any(o.startswith("P = 1: no rank pairs") and "KS heatmap" in o for o in fs.omitted)
    assert any("sₖ is constant" in o for o in fs.omitted)  # one rank: s_k = 0
    (params,) = [d for d in fs.drawn if d.key == "uniform-parameters"]
    assert "sₖ" not in params.title
    for d in fs.drawn:
        assert d.title
        assert d.caption
        assert 900 <= png_width(d.png) <= 1100


@pytest.mark.slow
def test_constant_span_gives_no_span_histogram() -> None:
    rng = np.random.default_rng(1)
    base = rng.uniform(1e-4, 3e-4, size=64)
    times = base[None, :] + 1e-5 * np.arange(8)[:, None]  # s_k = 70 µs in every iteration
    _, fs = drawn(trace_from_times(times, np.arange(8) // 4))
    assert any(o.startswith("sₖ is constant (70 µs)") for o in fs.omitted)
    (params,) = [d for d in fs.drawn if d.key == "uniform-parameters"]
    assert "sₖ" not in params.caption
    assert "aₖ" in params.caption


def test_two_ranks_state_their_one_pair_instead_of_a_heatmap() -> None:
    a, fs = drawn(synthetic_trace(nprocs=2, iterations=64, ranks_per_node=2))
    keys = {d.key for d in fs.drawn}
    assert "ks-heatmap" not in keys
    assert "iteration-vs-rank" not in keys
    assert "uniform-fits" not in keys
    assert a.ks_pair is not None
    assert any(f"one rank pair (D = {a.ks_pair.statistic:.3g}" in o for o in fs.omitted)
    assert {"rank-histograms", "colormap"} <= keys


@pytest.mark.slow
def test_one_node_scatter_has_no_node_inset_and_says_so() -> None:
    _, fs = drawn(synthetic_trace(nprocs=8, iterations=64, ranks_per_node=8))
    assert fs.get("iteration-vs-rank") is not None
    assert fs.get("ks-heatmap") is not None
    assert any(o.startswith("one node: no node pairs") for o in fs.omitted)


def test_heatmap_of_many_ranks_is_a_stated_seeded_subsample() -> None:
    ranks = figure_sets.heatmap_ranks(100)
    assert ranks.size == 64
    assert np.unique(ranks).size == 64
    assert (np.diff(ranks) > 0).all()
    assert figure_sets.heatmap_ranks(100).tolist() == ranks.tolist()
    assert figure_sets.heatmap_ranks(20).tolist() == list(range(20))
    _, fs = drawn(synthetic_trace(nprocs=80, iterations=40, ranks_per_node=16))
    heat = fs.get("ks-heatmap")
    assert heat is not None
    assert "random subsample of 64 of the P = 80 ranks (seed 0)" in heat.caption
    assert "hatched" in heat.caption


@pytest.mark.slow
def test_captions_say_how_a_long_tail_is_shown() -> None:
    t = synthetic_trace(nprocs=8, iterations=200, ranks_per_node=4, stationary=True)
    x = inject_outliers(t.iteration_seconds, 0.15, 16e-3, 80e-3)
    _, fs = drawn(trace_from_times(x, t.node_ids))
    bulk = fs.get("bulk-fit")
    assert bulk is not None
    assert "Logarithmic time axis" in bulk.caption
    colour = fs.get("colormap")
    assert colour is not None
    assert "1st-99th percentiles" in colour.caption
    assert "real k" in colour.caption


@pytest.fixture(scope="module")
def campaign() -> list[tuple[TraceAnalysis, TraceDigest]]:
    """gmres and pgmres at P = 4, gmres at P = 8, and gmres at P = 4 for a larger n."""
    out = []
    for ksp, nprocs, n, seed in (
        ("gmres", 4, 1000, 1), ("pgmres", 4, 1000, 2), ("gmres", 8, 1000, 3),
        ("gmres", 4, 2000, 4),
    ):
        t = synthetic_trace(nprocs=nprocs, iterations=64, ranks_per_node=4, ksp=ksp, n=n,
                            seed=seed)
        a = analyze_trace(t, LIGHT)
        out.append((a, digest_of(t, a)))
    return out


@pytest.mark.slow
def test_across_configurations_compare_solvers_and_scale_parameters(
    campaign: list[tuple[TraceAnalysis, TraceDigest]],
) -> None:
    fs = across_sets.across_figures(campaign)
    keys = [d.key for d in fs.drawn]
    assert keys == [
        "solvers-distributions-synthetic-n1000-P4",
        "solvers-models-synthetic-n1000-P4",
        "scaling-P-synthetic-gmres-n1000",
        "scaling-n-synthetic-gmres-P4",
    ]
    omitted = " | ".join(fs.omitted)
    assert "one solver only" in omitted
    assert "synthetic, n = 2000, P = 4 (gmres)" in omitted
    assert "one P only" in omitted
    assert "one n only" in omitted
    for d in fs.drawn:
        assert 900 <= png_width(d.png) <= 1100


def test_digest_keeps_log_binned_counts_of_every_value(
    campaign: list[tuple[TraceAnalysis, TraceDigest]],
) -> None:
    a, d = campaign[0]
    assert d.times.total == a.nprocs * a.kept
    assert d.lower.total == a.kept
    assert d.span.total == a.kept
    assert d.mean > 0
    assert d.std > 0
    assert across_sets.across_figures(campaign[:1]).drawn == ()


def test_digest_mean_and_std_are_those_of_the_kept_times() -> None:
    """The digest reuses the analysis' blocked mean and std; they are numpy's to rounding."""
    t = synthetic_trace(nprocs=4, iterations=64, ranks_per_node=4, ksp="gmres", seed=7)
    a = analyze_trace(t, LIGHT)
    d = digest_of(t, a)
    kept = t.iteration_seconds[:, a.layout.keep(True)] if a.kept < a.iterations \
        else t.iteration_seconds
    assert d.mean == pytest.approx(float(kept.mean()), rel=1e-12)
    assert d.std == pytest.approx(float(kept.std()), rel=1e-12)


@pytest.mark.slow
def test_bulk_fit_names_the_fits_whose_mean_outliers_pull() -> None:
    """The issue's case: 3 % of 8-28 ms detours pull the lognorm and JSU means off."""
    base = synthetic_trace(2, 600, 1, "bcgs", seed=5, base_seconds=2.8e-4)
    times = inject_outliers(base.iteration_seconds, 0.03, 8e-3, 28e-3, seed=1)
    trace = trace_from_times(times, np.array([0, 1]), ksp="bcgs")
    a = analyze_trace(trace, AnalysisOptions(mc_runs=2, candidates=("johnsonsu", "lognorm", "norm"),
                                             fit_size=1000))
    pulled = [f.subject.removeprefix("stationary model (").rstrip(")") for f in a.flags
              if f.code == "fit-mean-outliers" and f.subject.startswith("stationary model")]
    assert pulled
    fs = figure_sets.trace_figures(trace, a)
    bulk = fs.get("bulk-fit")
    assert bulk is not None
    for name in pulled:
        assert f"The {name} fit is flagged: the fitted mean" in bulk.caption
    assert "because of outliers" in bulk.caption
    params = fs.get("uniform-parameters")
    assert params is not None
    jsu = [f for f in a.flags if f.subject == "JSU fit of a_k" and f.code.startswith("fit-mean")]
    assert jsu
    assert f"The aₖ fit is flagged ({jsu[0].code})" in params.caption


def test_too_few_iterations_or_equal_times_draw_no_histogram_and_say_why() -> None:
    _, fs = drawn(synthetic_trace(nprocs=4, iterations=3, ranks_per_node=2))
    keys = {d.key for d in fs.drawn}
    assert "rank-histograms" not in keys
    assert "uniform-parameters" not in keys
    assert "K = 3: too few iterations (< 10) for per-rank histograms" in fs.omitted
    assert "K = 3: too few iterations (< 10) for aₖ and sₖ histograms" in fs.omitted
    _, fs = drawn(trace_from_times(np.full((4, 40), 1e-4), np.arange(4) // 2))
    assert fs.drawn == ()
    assert any(o.startswith("every Tₚᵏ shown equals 100 µs: no colormap") for o in fs.omitted)
    assert any("no rank scatter" in o for o in fs.omitted)


def test_a_span_that_is_zero_but_once_drops_its_panel_instead_of_failing() -> None:
    """Two ranks equal up to rounding except in one iteration: s_k has one value above 1 ns."""
    base = np.random.default_rng(2).uniform(1e-4, 2e-4, 60)
    times = np.vstack([base, base])
    times[1, 5] += 3e-5
    _, fs = drawn(trace_from_times(times, np.array([0, 0])))
    assert "sₖ: no histogram, fewer than two values above 1 ns (the others are 0 up to rounding)" \
        in fs.omitted
    params = fs.get("uniform-parameters")
    assert params is not None
    assert "aₖ" in params.title
    assert "sₖ" not in params.title


def _line_figure(value: float) -> Figure:
    fig = drawing._figure(4.0, 2.0)
    fig.add_subplot().plot([0.0, 1.0], [0.0, value])
    return fig


def _refused() -> Figure:
    raise AnalysisError("nothing to draw; give it data")


def test_figures_drawn_later_are_the_same_in_two_processes_and_keep_their_order() -> None:
    """The figures across runs are drawn after the traces, in --jobs processes (issue 35): the
    same PNGs in the same order as in one process, and a figure that cannot be drawn becomes an
    omitted line under the step that asked for it."""
    import functools

    from ksptrace.studies.variability.pages.collector import Collector

    def collect(jobs: int) -> tuple[list[tuple[str, bytes]], tuple[str, ...]]:
        out = Collector()

        def step() -> None:
            out.later("a", "A", "first", functools.partial(_line_figure, 1.0))
            out.later("bad", "B", "refused", _refused)
            out.later("c", "C", "third", functools.partial(_line_figure, 2.0))

        out.guarded("the step", step)
        result = out.result(jobs)
        return [(d.key, d.png) for d in result.drawn], result.omitted

    one, two = collect(1), collect(2)
    assert one == two
    assert [k for k, _ in one[0]] == ["a", "c"]
    assert all(png.startswith(b"\x89PNG") for _, png in one[0])
    assert one[1] == ("the step: not drawn, nothing to draw",)


def test_the_kept_times_axis_is_placed_once_for_the_bulk_and_cycle_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both figures over all kept times (bulk fit, restart-cycle histograms) share one axis."""
    trace = synthetic_trace(nprocs=4, iterations=200, ranks_per_node=2, ksp="gmres", seed=3)
    a = analyze_trace(trace, LIGHT)
    sizes: list[int] = []
    real = figure_sets.figures.time_axis

    def counting(values: np.ndarray) -> figure_sets.TimeAxis:
        sizes.append(int(np.asarray(values).size))
        return real(values)

    monkeypatch.setattr(figure_sets.figures, "time_axis", counting)
    fs = figure_sets.trace_figures(trace, a)
    keys = {d.key for d in fs.drawn}
    assert {"bulk-fit", "cycle-histograms"} <= keys
    assert sizes.count(trace.nprocs * a.kept) == 1


def _records(fs: FigureSet) -> list[tuple[str, str, str, bytes]]:
    return [(d.key, d.title, d.caption, d.png) for d in fs.drawn]


def test_a_large_trace_draws_its_rank_figures_in_a_forked_process(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    trace = synthetic_trace(nprocs=16, iterations=200, ranks_per_node=4, seed=1)
    a = analyze_trace(trace, LIGHT)
    here = figure_sets.trace_figures(trace, a)
    monkeypatch.setattr(collector, "FORK_ELEMENTS", trace.iteration_seconds.size)
    pids = tmp_path / "pids"
    real = figure_sets._colormap

    def colormap(*args: Any) -> None:
        with pids.open("a") as out:
            out.write(f"{os.getpid()}\n")
        real(*args)

    monkeypatch.setattr(figure_sets, "_colormap", colormap)
    there = figure_sets.trace_figures(trace, a)
    assert int(pids.read_text()) != os.getpid()  # drawn in another process
    assert _records(there) == _records(here)  # the same figures, pixels and order
    assert there.omitted == here.omitted
    assert {"colormap", "bulk-fit"} <= {d.key for d in there.drawn}


def _fill(into: Collector) -> None:
    into.omitted.append("first omitted")
    into.add("first", "First", "drawn beside", Figure(figsize=(1, 1)))


def test_figures_drawn_beside_take_the_place_they_would_have_had() -> None:
    out = Collector()
    out.add("zero", "Zero", "before", Figure(figsize=(1, 1)))
    side = out.beside(_fill)
    out.omitted.append("second omitted")
    out.later("later", "Later", "drawn last", lambda: Figure(figsize=(1, 1)))
    out.add("second", "Second", "after", Figure(figsize=(1, 1)))
    side.join()
    fs = out.result()
    assert [d.key for d in fs.drawn] == ["zero", "first", "later", "second"]
    assert fs.omitted == ("first omitted", "second omitted")
    assert all(d.png.startswith(b"\x89PNG") for d in fs.drawn)  # the later one was drawn too


def _fails(into: Collector) -> None:
    raise ValueError("broken drawing")


def test_an_error_in_the_forked_process_reaches_the_caller() -> None:
    side = Collector().beside(_fails)
    with pytest.raises(ValueError, match="broken drawing"):
        side.join()


def test_small_traces_and_pool_workers_draw_everything_themselves() -> None:
    assert collector.can_fork(collector.FORK_ELEMENTS) == ((os.cpu_count() or 1) > 1)
    assert not collector.can_fork(collector.FORK_ELEMENTS - 1)
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(1, mp_context=fork) as workers:  # analyze --jobs N's workers
        assert workers.submit(collector.can_fork, collector.FORK_ELEMENTS).result() is False
    with fork.Pool(1) as pool:  # daemonic workers, which cannot fork at all
        assert pool.apply(collector.can_fork, (collector.FORK_ELEMENTS,)) is False
