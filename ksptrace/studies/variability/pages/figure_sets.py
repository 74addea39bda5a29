"""Which figures a trace (or a set of traces) gets, with their captions, and which are left out.

``trace_figures`` and ``digest_of`` are called once per trace right after ``analyze_trace``; the
digest keeps the little the cross-configuration figures need (log-binned histograms of T_p^k,
a_k and s_k, and summary numbers; :mod:`.digest`), so that the trace itself need not be kept.
``across_figures`` (:mod:`.across_sets`) draws the paper's Figs. 8-11 kind of comparisons once
every trace has been digested. A figure that would be degenerate (one rank, one value, one
configuration) is not drawn; a one-line reason goes to ``FigureSet.omitted`` instead.

Per trace (keys): "rank-histograms" (Fig. 1; K >= 10), "ks-heatmap" (P >= 3, at most 64 ranks,
seeded subsample beyond), "iteration-vs-rank" (Fig. 2; P >= 4, node inset with 2+ nodes),
"colormap" (Fig. 3; P >= 2), "wait-map" (P >= 2, a trace with wait times), "bulk-fit" (Fig.
5), "uniform-fits" (Fig. 6; P >= 8), "uniform-parameters" (Fig. 7; K >= 10, a panel per
non-constant parameter), "cycle-histograms" (Fig. 12; restarted methods). Across traces:
"solvers-distributions-*" and "solvers-models-*" (Figs. 10-11; 2+ solvers for one problem, n
and P), "scaling-P-*" and "scaling-n-*" (Figs. 8-9; 2+ values of P or n).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.pages import figures
from ksptrace.studies.variability.pages.collector import Beside, Collector, _why, can_fork
from ksptrace.studies.variability.pages.digest import FigureSet, _kept_columns
from ksptrace.studies.variability.pages.figures import TimeAxis
from ksptrace.studies.variability.pages.wait_figure import add_wait_map
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats import ks
from ksptrace.studies.variability.stats.ordered import OrderedRows
from ksptrace.trace.model import Trace

MAX_HEATMAP_RANKS = 64
"""The KS heatmap shows every rank pair up to this many ranks, else a seeded subsample."""


HEATMAP_SEED = 0


MIN_HEATMAP_RANKS = 3
"""Below this, the single rank pair is stated in a line instead of drawn."""


MIN_SCATTER_RANKS = 4
"""Fewer ranks make a scatter of T_p^k against p that shows nothing."""


MIN_HISTOGRAM_RANKS = 8
"""Fewer ranks make a histogram over the ranks of one iteration that shows nothing."""


MIN_HISTOGRAM_VALUES = 10
"""Fewer values (iterations per rank, a_k or s_k) make a histogram that shows nothing."""


def _varies(x: np.ndarray | OrderedRows) -> bool:
    return not figures.is_constant(x)


def heatmap_ranks(nprocs: int, limit: int = MAX_HEATMAP_RANKS, seed: int = HEATMAP_SEED
                  ) -> np.ndarray:
    """All ranks up to ``limit``, else a seeded random subsample of ``limit``, sorted."""
    if nprocs <= limit:
        return np.arange(nprocs)
    return np.sort(np.random.default_rng(seed).choice(nprocs, size=limit, replace=False))


def _rank_figures(out: Collector, times: np.ndarray, kept: np.ndarray, trace: Trace,
                  a: TraceAnalysis, whole: np.ndarray | OrderedRows | None = None) -> None:
    """Per-rank histograms, the KS heatmap and the rank scatter (P >= 2)."""
    shown = list(dict.fromkeys((0, 1, a.nprocs - 1)))
    if kept.shape[1] < MIN_HISTOGRAM_VALUES:
        out.omitted.append(
            f"K = {kept.shape[1]}: too few iterations (< {MIN_HISTOGRAM_VALUES}) for per-rank "
            "histograms"
        )
    elif _varies(kept[shown]):
        axis = figures.time_axis(kept[shown])
        out.add(
            "rank-histograms",
            "Per-rank distributions of the iteration times",
            f"Distribution of Tₚᵏ over the {kept.shape[1]} kept iterations of ranks "
            f"{', '.join(map(str, shown))} (the paper's Fig. 1). "
            + axis.describe(),
            figures.rank_histograms(kept, shown, axis=axis),
        )
    else:
        out.omitted.append(
            "every iteration time of the ranks shown is equal: no per-rank histogram"
        )
    if a.nprocs < MIN_HEATMAP_RANKS:
        pair = a.ks_pair
        said = (
            "" if pair is None else f" (D = {pair.statistic:.3g} against the threshold "
            f"{pair.threshold:.3g}: {'rejected' if pair.rejected else 'not rejected'}, see the KS "
            "table)"
        )
        out.omitted.append(f"P = {a.nprocs}: one rank pair{said}; no KS heatmap")
    elif kept.shape[1] >= 2 and _varies(kept if whole is None else whole):
        alpha = a.ks_all.alpha if a.ks_all is not None else 0.05
        ranks = heatmap_ranks(a.nprocs)
        res = ks.pairwise(kept, ranks, alpha)
        which = (
            f"every pair of the P = {a.nprocs} ranks"
            if ranks.size == a.nprocs
            else f"every pair of a random subsample of {ranks.size} of the P = {a.nprocs} "
            f"ranks (seed {HEATMAP_SEED})"
        )
        pairs = ranks.size * (ranks.size - 1) // 2
        out.add(
            "ks-heatmap",
            "KS statistic of rank pairs",
            f"Two-sample KS statistic D for {which}, over the {res.n} kept iterations. Pairs "
            f"with D above the threshold {res.threshold:.3g} (α = {alpha:g}, the red line on "
            "the colour bar; blue below it, red above) are hatched: "
            f"{100 * res.fraction_rejected:.0f} % of the "
            f"{pairs} pairs are judged to come from different distributions.",
            figures.ks_heatmap(res),
        )
    else:
        out.omitted.append("K < 2 or constant times: no KS heatmap")
    k = a.focus_iteration
    one_node = a.n_nodes < 2
    if a.nprocs < MIN_SCATTER_RANKS:
        out.omitted.append(
            f"P = {a.nprocs}: too few ranks for a scatter of the iteration times against the "
            "rank; left out"
        )
        return
    if not _varies(times[:, k]):
        out.omitted.append(
            f"every rank took {figures.fmt_time(float(times[0, k]))} in iteration k = {k}: "
            "no rank scatter"
        )
        return
    out.add(
        "iteration-vs-rank",
        f"Iteration times against rank, k = {k}",
        f"Tₚᵏ of every rank p in iteration k = {k} (the paper's Fig. 2)"
        + ("." if one_node else ", with node boundaries; the right panel enlarges the first "
           "nodes.")
        + f" Times in {figures.unit_for(float(times[:, k].max()))[1]}.",
        figures.iteration_vs_rank(times, k, trace.node_ids),
    )
    if one_node:
        out.omitted.append(
            "one node: no node pairs; the node boundaries and first-nodes inset of the rank "
            "scatter are left out"
        )


def _no_jsu_reason(a: TraceAnalysis) -> str:
    """Why the analysis has no Johnson S_U fits of a_k and s_k, from its notes."""
    if a.nprocs == 1:
        return "P = 1: sₖ is 0 in every iteration, and the analysis fits aₖ and sₖ together"
    for note in a.notes:
        if note.startswith("Monte Carlo skipped: ") or "to fit a_k and s_k" in note:
            return note.removeprefix("Monte Carlo skipped: ").rstrip(".")
    return "see the notes"


def _uniform_figures(out: Collector, times: np.ndarray, a: TraceAnalysis,
                     keep: np.ndarray) -> None:
    """Iterations with uniform fits (P >= 2) and the a_k / s_k histograms."""
    mid = a.layout.at_position(a.layout.middle_position())
    candidates = [int(k) for k in (mid if mid.size else np.arange(a.iterations))]
    varying = [k for k in candidates if _varies(times[:, k])]
    # two equal-work iterations a third and two thirds into the run, as the paper's Fig. 6
    chosen = sorted({varying[len(varying) // 3], varying[2 * len(varying) // 3]}) if varying else []
    if 1 < a.nprocs < MIN_HISTOGRAM_RANKS:
        out.omitted.append(
            f"P = {a.nprocs}: too few ranks (< {MIN_HISTOGRAM_RANKS}) for a histogram over the "
            "ranks of one iteration; the uniform-fit figure is left out"
        )
    elif a.nprocs > 1 and chosen:
        out.add(
            "uniform-fits",
            "Iterations with their uniform fits",
            f"Histograms over the ranks of Tₚᵏ in iterations k = {', '.join(map(str, chosen))}, "
            "each with its uniform distribution on [aₖ, aₖ + sₖ] (the paper's Fig. 6).",
            figures.uniform_fits(times, chosen),
        )
    elif a.nprocs > 1:
        out.omitted.append("every equal-work iteration has sₖ = 0: no uniform-fit figure")
    if keep.size < MIN_HISTOGRAM_VALUES:
        out.omitted.append(
            f"K = {keep.size}: too few iterations (< {MIN_HISTOGRAM_VALUES}) for aₖ and sₖ "
            "histograms"
        )
        return
    panels = [w for w in ("lower", "span") if _varies(getattr(a.uniform, w)[keep])]
    for w in ("lower", "span"):
        if w not in panels:
            name = "aₖ" if w == "lower" else "sₖ"
            value = float(getattr(a.uniform, w)[keep][0])
            why = "P = 1: " if a.nprocs == 1 and w == "span" else ""
            out.omitted.append(
                f"{why}{name} is constant ({figures.fmt_time(value)}): no {name} histogram"
            )
    named = {"lower": "aₖ", "span": "sₖ"}
    drawable: dict[str, figures.TimeAxis] = {}
    for w in panels:
        try:
            drawable[w] = figures.time_axis(getattr(a.uniform, w)[keep])
        except AnalysisError as exc:
            out.omitted.append(f"{named[w]}: no histogram, {_why(exc)}")
    panels = list(drawable)
    if not panels:
        return
    axes = [drawable[w] for w in panels]
    what = {"lower": "minimum", "span": "span"}
    shown = [named[w] for w in panels]
    clipping = " ".join(f"{named[w]}: {ax.describe()}" for w, ax in zip(panels, axes, strict=True))
    collapsed = [named[w] for w in panels if a.parameters is not None
                 and getattr(a.parameters, f"{w}_normal") is not None]
    fit = (
        f"no Johnson S_U fit ({_no_jsu_reason(a)})" if a.parameters is None
        else "the Johnson S_U fit" + ("s" if len(panels) > 1 else "")
        + (f" ({', '.join(collapsed)}: the fit collapsed, its normal limit is drawn)"
           if collapsed else "")
    )
    ascii_name = {"lower": "a_k", "span": "s_k"}
    jsu_flags = "".join(
        f" The {named[w]} fit is flagged ({f.code}): {f.message.rstrip('.')}."
        for w in panels for f in a.flags
        if f.subject == f"JSU fit of {ascii_name[w]}" and f.code != "prediction-far"
    )
    out.add(
        "uniform-parameters",
        f"Uniform parameter{'s' if len(panels) > 1 else ''} {' and '.join(shown)} with "
        "Johnson S_U fits",
        f"Histogram{'s' if len(panels) > 1 else ''} of the per-iteration "
        f"{' and '.join(f'{what[w]} {named[w]}' for w in panels)} over the {keep.size} kept "
        f"iterations, with {fit} (the paper's Fig. 7). {clipping}{jsu_flags}",
        figures.uniform_parameters(a.uniform, a.parameters, keep=keep, panels=panels),
    )


def _fit_remarks(a: TraceAnalysis, names: Sequence[str]) -> dict[str, Flag]:
    """The flag of each shown family whose fitted mean is off the sample mean."""
    out: dict[str, Flag] = {}
    for f in a.flags:
        for name in names:
            if f.subject == f"stationary model ({name})" and f.code.startswith("fit-mean"):
                out.setdefault(name, f)
    return out


def _colormap(out: Collector, times: np.ndarray, a: TraceAnalysis) -> None:
    """The colormap of T_p^k over ranks and equal-work iterations (the paper's Fig. 3)."""
    mid = a.layout.at_position(a.layout.middle_position())
    sel = mid if mid.size > 1 else None
    shown = times if sel is None else times[:, sel]
    if shown.shape[1] < 2:
        out.omitted.append("K = 1: one iteration, no colormap")
        return
    if not _varies(shown):
        out.omitted.append(
            f"every Tₚᵏ shown equals {figures.fmt_time(float(shown[0, 0]))}: no colormap"
        )
        return
    lo, hi = figures.colour_limits(times, sel)
    which = (
        f"the equal-work iterations k mod {a.layout.cycle_length} = "
        f"{a.layout.middle_position()}" if sel is not None else "every iteration"
    )
    out.add(
        "colormap",
        "Colormap of the iteration times",
        f"Tₚᵏ over ranks p (x) and {which} (y, labelled with the real k) (the paper's "
        f"Fig. 3). Colours clipped to the 1st-99th percentiles, {figures.fmt_time(lo)} to "
        f"{figures.fmt_time(hi)}"
        + (", on a logarithmic colour scale" if figures.colour_is_log(lo, hi) else "")
        + (" (block means over large traces)." if max(times.shape) > figures.MAX_IMAGE_ROWS
           else "."),
        figures.colormap(times, sel),
    )


def _cycle_figure(out: Collector, times: np.ndarray, kept: np.ndarray | OrderedRows,
                  a: TraceAnalysis, kept_axis: Callable[[], TimeAxis]) -> None:
    """Histograms by restart-cycle position (the paper's Fig. 12), for restarted methods."""
    if a.layout.cycle_length < 2 or kept.shape[1] < MIN_HISTOGRAM_VALUES or not _varies(kept):
        return
    first = int(a.layout.keep(True)[0] % a.layout.cycle_length)
    positions = sorted({first, a.layout.middle_position(), a.layout.cycle_length - 1})
    axis = kept_axis()
    out.add(
        "cycle-histograms",
        "Iterations by position in the restart cycle",
        f"Histograms of Tₚᵏ at restart-cycle positions k mod {a.layout.cycle_length} = "
        f"{', '.join(map(str, positions))} next to all kept iterations (the paper's "
        f"Fig. 12). {axis.describe()}",
        figures.cycle_histograms(times, a.layout, positions, axis=axis,
                                 kept=kept if isinstance(kept, OrderedRows) else None),
    )


def _bulk_figure(out: Collector, kept: np.ndarray | OrderedRows, a: TraceAnalysis,
                 kept_axis: Callable[[], TimeAxis]) -> None:
    """The bulk histogram with the best fitted families (the paper's Fig. 5)."""
    if a.bulk is None or not _varies(kept):
        return
    axis = kept_axis()
    shown = [f.name for f in a.bulk.fits if f.ok][:4]
    remarks = _fit_remarks(a, shown)
    flagged = "".join(
        f" The {name} fit is flagged: {a_flag.message.rstrip('.')}."
        for name, a_flag in remarks.items()
    )
    out.add(
        "bulk-fit",
        "Bulk distribution with fitted families",
        f"Histogram of all {kept.size} kept Tₚᵏ with the {len(shown)} best verified fits by "
        f"AIC ({', '.join(shown)}) (the paper's Fig. 5). {axis.describe()}{flagged}",
        figures.bulk_fit(a.bulk, values=kept, axis=axis,
                         remarks={n: f"flagged: {f.code}" for n, f in remarks.items()}),
    )


def trace_figures(trace: Trace, a: TraceAnalysis, ordered: OrderedRows | None = None
                  ) -> FigureSet:
    """Every per-trace figure of the paper that makes sense for this trace. ``ordered``: the
    kept times' rows sorted (:func:`pipeline.ordered_kept`), if made already: the histograms
    and axes of all kept times are then counted on them (the same counts)."""
    out = Collector()
    times = trace.iteration_seconds
    keep = _kept_columns(a)
    kept = times if keep.size == times.shape[1] else times[:, keep]
    whole: np.ndarray | OrderedRows = kept
    if ordered is not None and ordered.shape == kept.shape:
        whole = ordered
    side: Beside | None = None
    if a.nprocs > 1:
        def by_rank(into: Collector) -> None:
            into.guarded("rank figures", _rank_figures, into, times, kept, trace, a, whole)
            into.guarded("colormap", _colormap, into, times, a)
            into.guarded("wait heat map", add_wait_map, into, trace)

        if can_fork(times.size):  # half the figures of a large trace on the other core
            side = out.beside(by_rank)
        else:
            by_rank(out)
    else:
        out.omitted.append(
            "P = 1: no rank pairs; the per-rank histograms, the KS heatmap, the rank scatter "
            "and the colormap are left out"
        )
    try:
        # one axis for the kept times, shared by two figures (0.2 s a time at paper scale)
        kept_axis = functools.cache(lambda: figures.time_axis(whole))
        out.guarded("bulk fit", _bulk_figure, out, whole, a, kept_axis)
        out.guarded("uniform fits and aₖ/sₖ histograms", _uniform_figures, out, times, a, keep)
        out.guarded("restart-cycle histograms", _cycle_figure, out, times, whole, a, kept_axis)
    except BaseException:
        if side is not None:
            side.stop()
        raise
    if side is not None:
        side.join()
    return out.result()
