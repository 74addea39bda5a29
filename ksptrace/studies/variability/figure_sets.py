"""Which figures a trace (or a set of traces) gets, with their captions, and which are left out.

``trace_figures`` and ``digest`` are called once per trace right after ``analyze_trace``; the
digest keeps the little the cross-configuration figures need (log-binned histograms of T_p^k,
a_k and s_k, and summary numbers), so that the trace itself need not be kept. ``across_figures``
draws the paper's Figs. 8-11 kind of comparisons once every trace has been digested. A figure
that would be degenerate (one rank, one value, one configuration) is not drawn; a one-line
reason goes to ``FigureSet.omitted`` instead.

Per trace (keys): "rank-histograms" (Fig. 1; K >= 10), "ks-heatmap" (P >= 3, at most 64 ranks,
seeded subsample beyond), "iteration-vs-rank" (Fig. 2; P >= 4, node inset with 2+ nodes),
"colormap" (Fig. 3; P >= 2), "bulk-fit" (Fig. 5), "uniform-fits" (Fig. 6; P >= 8),
"uniform-parameters" (Fig. 7; K >= 10, a panel per non-constant parameter), "cycle-histograms"
(Fig. 12; restarted methods). Across traces: "solvers-distributions-*" and "solvers-models-*"
(Figs. 10-11; 2+ solvers for one problem, n and P), "scaling-P-*" and "scaling-n-*" (Figs. 8-9;
2+ values of P or n).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ksptrace.errors import AnalysisError
from ksptrace.studies import drawing
from ksptrace.studies.variability import figures, ks
from ksptrace.studies.variability.flags import Flag
from ksptrace.studies.variability.pipeline import TraceAnalysis
from ksptrace.trace.model import Trace

LOG_EDGES = np.logspace(-9.0, 3.0, 12 * 10 + 1)
"""Common log-spaced bin edges (1 ns .. 1000 s, 10 bins per decade) of every digest histogram,
so that histograms of different traces can be overlaid and compared bin by bin."""


@dataclass(frozen=True)
class Drawn:
    """One drawn figure."""

    key: str
    """Stable id, e.g. "ks-heatmap", "rank-histograms"."""
    title: str
    """Short heading."""
    caption: str
    """What is shown, log axis or clip quantile, units, subsampling."""
    png: bytes


@dataclass(frozen=True)
class FigureSet:
    """The figures drawn, and one line for each figure left out, saying why."""

    drawn: tuple[Drawn, ...]
    omitted: tuple[str, ...] = ()

    def get(self, key: str) -> Drawn | None:
        """The figure with this key, or None."""
        return next((d for d in self.drawn if d.key == key), None)


@dataclass(frozen=True)
class LogHistogram:
    """Counts of values in the bins of ``LOG_EDGES``; values below 1 ns (timer resolution: a
    span s_k of 0) are counted apart, values above 1000 s in the last bin."""

    counts: np.ndarray
    """int64 [len(LOG_EDGES) - 1]."""
    below: int
    """Values below 1 ns, not binned."""

    @property
    def total(self) -> int:
        return int(self.counts.sum()) + self.below

    def density(self) -> np.ndarray:
        """Density per second of each bin (integrates to the binned share of the values)."""
        total = max(self.total, 1)
        return self.counts / (total * np.diff(LOG_EDGES))


def log_histogram(values: np.ndarray) -> LogHistogram:
    """The values binned on the common log grid."""
    x = figures.finite(values)
    # equal bins in log10, a block at a time: no binary search per value, no copy of the trace
    counts, below = figures.binned_counts(
        x, LOG_EDGES.size - 1, float(np.log10(LOG_EDGES[0])), float(np.log10(LOG_EDGES[-1])),
        log=True, floor=float(LOG_EDGES[0]), ceiling=float(LOG_EDGES[-1]))
    counts.setflags(write=False)
    return LogHistogram(counts=counts, below=below)


@dataclass(frozen=True)
class TraceDigest:
    """What the cross-configuration figures need from one trace."""

    label: str
    problem: str
    ksp: str
    n: float | None
    nprocs: int
    pipelined: bool
    times: LogHistogram
    """Kept T_p^k."""
    lower: LogHistogram
    """a_k of the kept iterations."""
    span: LogHistogram
    """s_k of the kept iterations."""
    mean: float
    """Mean of the kept T_p^k (s)."""
    std: float
    """Standard deviation of the kept T_p^k (s)."""


def _kept_columns(a: TraceAnalysis) -> np.ndarray:
    return a.layout.keep(True) if a.kept < a.iterations else np.arange(a.iterations)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def digest(trace: Trace, a: TraceAnalysis) -> TraceDigest:
    """The small summary of one trace that ``across_figures`` uses."""
    keep = _kept_columns(a)
    times = trace.iteration_seconds
    kept = times if keep.size == times.shape[1] else times[:, keep]
    attrs = dict(a.attrs)
    return TraceDigest(
        label=a.label,
        problem=str(attrs.get("problem", "")),
        ksp=a.ksp,
        n=_number(attrs.get("n")),
        nprocs=a.nprocs,
        pipelined=a.pipelined,
        times=log_histogram(kept),
        lower=log_histogram(a.uniform.lower[keep]),
        span=log_histogram(a.uniform.span[keep]),
        mean=float(kept.mean()),
        std=float(kept.std()),
    )


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


def _varies(x: np.ndarray) -> bool:
    return not figures.is_constant(x)


def heatmap_ranks(nprocs: int, limit: int = MAX_HEATMAP_RANKS, seed: int = HEATMAP_SEED
                  ) -> np.ndarray:
    """All ranks up to ``limit``, else a seeded random subsample of ``limit``, sorted."""
    if nprocs <= limit:
        return np.arange(nprocs)
    return np.sort(np.random.default_rng(seed).choice(nprocs, size=limit, replace=False))


def _why(exc: AnalysisError) -> str:
    """The reason of an error, without its advice to the caller."""
    return str(exc).split(";")[0]


class _Collector:
    """Draws figures into Drawn records and closes nothing it does not need (Agg, no pyplot)."""

    def __init__(self) -> None:
        self.drawn: list[Drawn] = []
        self.omitted: list[str] = []

    def add(self, key: str, title: str, caption: str, fig: Figure) -> None:
        self.drawn.append(Drawn(key, title, caption, drawing.to_png(fig)))
        fig.clear()

    def guarded(self, what: str, step: Callable[..., None], *args: Any) -> None:
        """Run one drawing step; a figure it cannot draw becomes an omitted line."""
        try:
            step(*args)
        except AnalysisError as exc:
            self.omitted.append(f"{what}: not drawn, {_why(exc)}")

    def result(self) -> FigureSet:
        return FigureSet(tuple(self.drawn), tuple(self.omitted))


def _rank_figures(out: _Collector, times: np.ndarray, kept: np.ndarray, trace: Trace,
                  a: TraceAnalysis) -> None:
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
    elif kept.shape[1] >= 2 and _varies(kept):
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


def _uniform_figures(out: _Collector, times: np.ndarray, a: TraceAnalysis,
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


def _colormap(out: _Collector, times: np.ndarray, a: TraceAnalysis) -> None:
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


def _cycle_figure(out: _Collector, times: np.ndarray, kept: np.ndarray, a: TraceAnalysis) -> None:
    """Histograms by restart-cycle position (the paper's Fig. 12), for restarted methods."""
    if a.layout.cycle_length < 2 or kept.shape[1] < MIN_HISTOGRAM_VALUES or not _varies(kept):
        return
    first = int(a.layout.keep(True)[0] % a.layout.cycle_length)
    positions = sorted({first, a.layout.middle_position(), a.layout.cycle_length - 1})
    axis = figures.time_axis(kept)
    out.add(
        "cycle-histograms",
        "Iterations by position in the restart cycle",
        f"Histograms of Tₚᵏ at restart-cycle positions k mod {a.layout.cycle_length} = "
        f"{', '.join(map(str, positions))} next to all kept iterations (the paper's "
        f"Fig. 12). {axis.describe()}",
        figures.cycle_histograms(times, a.layout, positions, axis=axis),
    )


def _bulk_figure(out: _Collector, kept: np.ndarray, a: TraceAnalysis) -> None:
    """The bulk histogram with the best fitted families (the paper's Fig. 5)."""
    if a.bulk is None or not _varies(kept):
        return
    axis = figures.time_axis(kept)
    shown = [f.name for f in a.bulk.fits[:4]]
    remarks = _fit_remarks(a, shown)
    flagged = "".join(
        f" The {name} fit is flagged: {a_flag.message.rstrip('.')}."
        for name, a_flag in remarks.items()
    )
    out.add(
        "bulk-fit",
        "Bulk distribution with fitted families",
        f"Histogram of all {kept.size} kept Tₚᵏ with the {len(shown)} best fitted pdfs by "
        f"SSE ({', '.join(shown)}) (the paper's Fig. 5). {axis.describe()}{flagged}",
        figures.bulk_fit(a.bulk, values=kept, axis=axis,
                         remarks={n: f"flagged: {f.code}" for n, f in remarks.items()}),
    )


def trace_figures(trace: Trace, a: TraceAnalysis) -> FigureSet:
    """Every per-trace figure of the paper that makes sense for this trace."""
    out = _Collector()
    times = trace.iteration_seconds
    keep = _kept_columns(a)
    kept = times if keep.size == times.shape[1] else times[:, keep]
    if a.nprocs > 1:
        out.guarded("rank figures", _rank_figures, out, times, kept, trace, a)
        out.guarded("colormap", _colormap, out, times, a)
    else:
        out.omitted.append(
            "P = 1: no rank pairs; the per-rank histograms, the KS heatmap, the rank scatter "
            "and the colormap are left out"
        )
    out.guarded("bulk fit", _bulk_figure, out, kept, a)
    out.guarded("uniform fits and aₖ/sₖ histograms", _uniform_figures, out, times, a, keep)
    out.guarded("restart-cycle histograms", _cycle_figure, out, times, kept, a)
    return out.result()


def _fmt_n(n: float | None) -> str:
    if n is None:
        return "n = ?"
    return f"n = {int(n)}" if float(n).is_integer() else f"n = {n:g}"


def _solver_times(a: TraceAnalysis, label: str) -> figures.SolverTimes:
    best = a.best_fit_name
    model = a.model(best) if best is not None else None
    return figures.SolverTimes(
        label=label,
        measured=a.measured,
        lockstep_sum=a.lockstep_sum,
        rank_sum_max=a.rank_sum_max,
        nonstationary=a.nonstationary.pipelined if a.pipelined else a.nonstationary.standard,
        stationary=None if model is None else (model.pipelined if a.pipelined else model.standard),
        stationary_name=best,
        simulated=a.simulated,
        simulated_stderr=a.simulated_stderr,
    )


def _solver_figures(out: _Collector, items: Sequence[tuple[TraceAnalysis, TraceDigest]]) -> None:
    """Solvers overlaid for the same problem, n and P (the paper's Figs. 10-11)."""
    groups: dict[tuple[str, str, int], list[tuple[TraceAnalysis, TraceDigest]]] = {}
    for a, d in items:
        groups.setdefault((d.problem, _fmt_n(d.n), d.nprocs), []).append((a, d))
    single: list[str] = []
    for (problem, n, nprocs), members in groups.items():
        solvers = list(dict.fromkeys(d.ksp for _, d in members))
        name = f"{problem}, {n}, P = {nprocs}"
        if len(solvers) < 2:
            single.append(f"{name} ({solvers[0]})")
            continue
        slug = f"{problem}-{n.replace(' ', '').replace('=', '')}-P{nprocs}"
        merged = []
        for s in solvers:
            mine = [d for _, d in members if d.ksp == s]
            merged.append((
                s if len(mine) == 1 else f"{s} ({len(mine)} runs)",
                [sum(getattr(d, w).counts for d in mine) for w in ("times", "lower", "span")],
            ))
        out.add(
            f"solvers-distributions-{slug}",
            f"Solvers compared: {name}",
            f"Distributions of Tₚᵏ, aₖ and sₖ (kept iterations, repetitions pooled) of each "
            f"solver for {name} (the paper's Figs. 10-11). Logarithmic time axes, density per "
            "decade, so that solvers far apart share the axes; values below 1 ns (sₖ = 0) are not "
            "shown.",
            figures.solver_distributions(
                LOG_EDGES, merged, ("iteration time $T_p^k$", "minimum $a_k$", "span $s_k$")
            ),
        )
        seen: dict[str, int] = {}
        rows = []
        for a, d in members:
            seen[d.ksp] = seen.get(d.ksp, 0) + 1
            label = d.ksp if seen[d.ksp] == 1 else f"{d.ksp} #{seen[d.ksp]}"
            kind = "pipelined" if d.pipelined else "standard"
            rows.append(_solver_times(a, f"{label}\n({kind})"))
        out.add(
            f"solvers-models-{slug}",
            f"Measured and modelled KSPSolve: {name}",
            f"For each run of {name}: the measured KSPSolve (slowest rank), the measured "
            "Σₖ maxₚ Tₚᵏ and maxₚ Σₖ Tₚᵏ, the non-stationary model, the best stationary model "
            "(lowest SSE) and the Monte Carlo mean with its standard error, each for the "
            "method kind the solver is (standard or pipelined).",
            figures.solver_times(rows),
        )
    if single:
        out.omitted.append(
            f"one solver only, no solver comparison for: {'; '.join(single)}"
        )


def _scaling_figures(out: _Collector, items: Sequence[tuple[TraceAnalysis, TraceDigest]],
                     across: str) -> None:
    """Model parameters across P (fixed n) or across n (fixed P) (the paper's Figs. 8-9)."""
    groups: dict[tuple[str, str, str], dict[float, list[tuple[TraceAnalysis, TraceDigest]]]] = {}
    for a, d in items:
        x = float(d.nprocs) if across == "P" else d.n
        if x is None:
            continue
        fixed = _fmt_n(d.n) if across == "P" else f"P = {d.nprocs}"
        groups.setdefault((d.problem, d.ksp, fixed), {}).setdefault(x, []).append((a, d))
    single: list[str] = []
    for (problem, ksp, fixed), by_x in groups.items():
        name = f"{problem}, {ksp}, {fixed}"
        if len(by_x) < 2:
            single.append(name)
            continue
        points = []
        missing: list[str] = []
        for x, members in sorted(by_x.items()):
            params = next((a.parameters for a, _ in members if a.parameters is not None), None)
            fits = {}
            for w, name_w in (("lower", "aₖ"), ("span", "sₖ")):
                collapsed = params is not None and getattr(params, f"{w}_normal") is not None
                fits[w] = None if params is None or collapsed else getattr(params, w)
                if fits[w] is None:
                    why = "collapsed" if collapsed else "none"
                    missing.append(f"{name_w} at {across} = {x:g} ({why})")
            points.append(figures.ScalingPoint(
                x=x,
                mean=float(np.mean([d.mean for _, d in members])),
                std=float(np.mean([d.std for _, d in members])),
                lower=fits["lower"],
                span=fits["span"],
            ))
        slug = f"{problem}-{ksp}-{fixed.replace(' ', '').replace('=', '')}"
        what = "processor counts P" if across == "P" else "problem sizes n"
        gaps = f" No Johnson S_U fit drawn for {', '.join(missing)}." if missing else ""
        out.add(
            f"scaling-{across}-{slug}",
            f"Across {what}: {name}",
            f"Model parameters of {name} at {len(points)} {what}: mean ± standard deviation "
            "of the kept Tₚᵏ (repetitions averaged), the Johnson S_U shape parameters a and b "
            "of aₖ and sₖ, and the fitted aₖ and sₖ densities (first repetition; per decade on a "
            "logarithmic axis when they span orders of magnitude) (the paper's "
            f"Figs. 8-9).{gaps}",
            figures.scaling(points, across),
        )
    if single:
        out.omitted.append(f"one {across} only, no scaling plot across {across} for: "
                           + "; ".join(single))


def across_figures(items: Sequence[tuple[TraceAnalysis, TraceDigest]]) -> FigureSet:
    """Solvers compared (Figs. 10-11) and model parameters across P and across n (Figs. 8-9)."""
    out = _Collector()
    out.guarded("solver comparisons", _solver_figures, out, items)
    out.guarded("scaling across P", _scaling_figures, out, items, "P")
    out.guarded("scaling across n", _scaling_figures, out, items, "n")
    return out.result()
