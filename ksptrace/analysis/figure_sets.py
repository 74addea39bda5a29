"""Which figures a trace (or a set of traces) gets, with their captions, and which are left out.

``trace_figures`` and ``digest`` are called once per trace right after ``analyze_trace``; the
digest keeps the little the cross-configuration figures need (log-binned histograms of T_p^k,
a_k and s_k, and summary numbers), so that the trace itself need not be kept. ``across_figures``
draws the paper's Figs. 8-11 kind of comparisons once every trace has been digested. A figure
that would be degenerate (one rank, one value, one configuration) is not drawn; a one-line
reason goes to ``FigureSet.omitted`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from ksptrace.analysis import figures
from ksptrace.analysis.pipeline import TraceAnalysis
from ksptrace.trace.model import Trace

LOG_EDGES = np.logspace(-9.0, 3.0, 12 * 20 + 1)
"""Common log-spaced bin edges (1 ns .. 1000 s, 20 bins per decade) of every digest histogram,
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
    """Counts of positive values in the bins of ``LOG_EDGES`` (zero and negative values apart)."""

    counts: np.ndarray
    """int64 [len(LOG_EDGES) - 1]."""
    nonpositive: int
    """Values <= 0 (a span s_k of 0 on a single rank, for instance), not binned."""

    @property
    def total(self) -> int:
        return int(self.counts.sum()) + self.nonpositive

    def density(self) -> np.ndarray:
        """Density per second of each bin (integrates to the binned share of the values)."""
        total = max(self.total, 1)
        return self.counts / (total * np.diff(LOG_EDGES))


def log_histogram(values: np.ndarray) -> LogHistogram:
    """The values binned on the common log grid."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    positive = x[x > 0]
    counts, _ = np.histogram(np.clip(positive, LOG_EDGES[0], LOG_EDGES[-1]), bins=LOG_EDGES)
    counts = counts.astype(np.int64)
    counts.setflags(write=False)
    return LogHistogram(counts=counts, nonpositive=int(x.size - positive.size))


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


def _png(fig: Figure) -> bytes:
    return figures.to_png(fig)


def trace_figures(trace: Trace, a: TraceAnalysis) -> FigureSet:
    """Every per-trace figure of the paper that makes sense for this trace."""
    times = trace.iteration_seconds
    drawn: list[Drawn] = []
    omitted: list[str] = []

    def add(key: str, title: str, caption: str, draw: Callable[[], Figure]) -> None:
        drawn.append(Drawn(key, title, caption, _png(draw())))

    if a.nprocs > 1:
        add(
            "rank-histograms",
            "Per-rank histograms",
            "Distribution of the iteration times of ranks 0 and 1 over k.",
            lambda: figures.rank_histograms(times, (0, 1)),
        )
        add(
            "iteration-vs-rank",
            f"T_p^k against rank, k = {a.focus_iteration}",
            f"Iteration times of every rank p in iteration k = {a.focus_iteration}, "
            "with node boundaries.",
            lambda: figures.iteration_vs_rank(times, a.focus_iteration, trace.node_ids),
        )
    else:
        omitted.append(
            "P = 1: no rank pairs; the per-rank histograms, the KS heatmap and the rank "
            "scatter are left out"
        )
    mid = a.layout.at_position(a.layout.middle_position())
    add(
        "colormap",
        "Colormap of equal-work iterations",
        "T_p^k over ranks and equal-work iterations; colours clipped to the 1st-99th "
        "percentiles.",
        lambda: figures.colormap(times, mid if mid.size > 1 else None),
    )
    if a.bulk is not None:
        bulk = a.bulk
        add(
            "bulk-fit",
            "Bulk histogram with fitted pdfs",
            "Histogram of all kept T_p^k with the best fitted families.",
            lambda: figures.bulk_fit(bulk),
        )
    if a.nprocs > 1:
        shown = sorted({int(mid[0]), int(mid[min(1, mid.size - 1)])}) if mid.size else [0]
        add(
            "uniform-fits",
            "Iterations with uniform fits",
            f"Histograms of T_p^k over p for k = {', '.join(map(str, shown))}, with the "
            "uniform distribution on [a_k, a_k + s_k].",
            lambda: figures.uniform_fits(times, shown),
        )
        add(
            "uniform-parameters",
            "a_k and s_k with Johnson S_U fits",
            "Histograms of the per-iteration minimum a_k and span s_k with their Johnson "
            "S_U fits.",
            lambda: figures.uniform_parameters(a.uniform, a.parameters),
        )
    else:
        omitted.append(
            "P = 1: every iteration has one value (s_k = 0); the uniform-fit and a_k/s_k "
            "histograms are left out"
        )
    return FigureSet(tuple(drawn), tuple(omitted))


def across_figures(items: Sequence[tuple[TraceAnalysis, TraceDigest]]) -> FigureSet:
    """Johnson S_U curves of a_k and s_k across P and across n, for groups of 2+ values."""
    drawn: list[Drawn] = []
    omitted: list[str] = []
    for across, fixed in (("P", "n"), ("n", "P")):
        groups: dict[tuple[str, str, str], list[tuple[str, TraceAnalysis]]] = {}
        for a, d in items:
            fixed_value = d.n if fixed == "n" else d.nprocs
            value = d.nprocs if across == "P" else d.n
            groups.setdefault((d.problem, d.ksp, f"{fixed} = {fixed_value:g}"), []).append(
                (f"{across} = {value:g}" if value is not None else f"{across} = ?", a)
            )
        for g, members in groups.items():
            entries = [(label, m.parameters) for label, m in members if m.parameters is not None]
            if len({label for label, _ in entries}) < 2:
                omitted.append(f"{', '.join(g)}: one value of {across}; no scaling plot across it")
                continue
            fig = figures.scaling_curves(entries, f"{across} ({', '.join(g)})")
            drawn.append(
                Drawn(
                    f"scaling-jsu-{across}-{'-'.join(g)}",
                    f"Johnson S_U across {across}: {', '.join(g)}",
                    f"Johnson S_U fits of a_k and s_k for {', '.join(g)} at each {across}.",
                    _png(fig),
                )
            )
    return FigureSet(tuple(drawn), tuple(omitted))
