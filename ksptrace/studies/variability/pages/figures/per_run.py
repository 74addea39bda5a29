"""The figures of one run: iteration-time histograms per rank, iteration against rank, the
colormap of every iteration on every rank, and the KS heatmap between ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm, Normalize, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ksptrace.studies.drawing import _figure
from ksptrace.studies.variability.pages.figures.axes import (
    COLOUR_QUANTILES,
    HISTOGRAM_BLOCK,
    LOG_COLOUR_RATIO,
    MAX_IMAGE_ROWS,
    TimeAxis,
    binned_counts,
    legend,
    time_axis,
    unit_for,
)
from ksptrace.studies.variability.stats.ks import KSPairwise
from ksptrace.studies.variability.stats.ordered import OrderedRows


def density(values: np.ndarray | OrderedRows, axis: TimeAxis, bins: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """(edges in units, density) over the axis range, normalised by the count of all values:
    in 1/unit on a linear axis, per decade on a logarithmic one. Sorted rows
    (:class:`OrderedRows`) are counted by binary searches of the edges: the same counts."""
    edges = axis.edges(bins)
    # equal bins in the axis' own scale: numpy's arithmetic binning, no binary search per value
    span = ((float(np.log10(axis.lo)), float(np.log10(axis.hi))) if axis.log
            else (axis.lo, axis.hi))
    if isinstance(values, OrderedRows):
        counts, _ = values.binned(bins, *span, log=axis.log)
        size = values.size
    else:
        x = np.asarray(values, dtype=np.float64).ravel()
        counts, _ = binned_counts(x, bins, *span, log=axis.log)
        size = x.size
    widths = np.diff(np.log10(edges)) if axis.log else np.diff(edges / axis.scale)
    return edges / axis.scale, counts / (max(size, 1) * widths)


def pdf_curve(ax: Axes, dist: Any, axis: TimeAxis, label: str, ceiling: float) -> None:
    """Draw a fitted pdf in the axis' density (1/unit, or per decade: x f(x) ln 10)."""
    grid = axis.grid()
    with np.errstate(all="ignore"):
        y = np.asarray(dist.pdf(grid), dtype=np.float64)
    y = y * grid * np.log(10.0) if axis.log else y * axis.scale
    y = np.where(np.isfinite(y), y, np.nan)
    ax.plot(grid / axis.scale, np.minimum(y, ceiling * 10), linewidth=1.8, label=label)


def _marker_size(points: int) -> float:
    """Marker size (pt) that shows at the report's width for this many points."""
    return 6.0 if points <= 64 else 4.5 if points <= 512 else 3.0 if points <= 4096 else 2.0


def rank_histograms(
    times: np.ndarray,
    ranks: Sequence[int] = (0, 1),
    bins: int = 80,
    *,
    axis: TimeAxis | None = None,
) -> Figure:
    """Distribution of T_p^k over k for a few fixed ranks (the paper's Fig. 1)."""
    x = np.asarray(times)
    shown = list(dict.fromkeys(r for r in ranks if 0 <= r < x.shape[0]))
    ax_ = axis or time_axis(x[shown])
    fig = _figure(height=3.8)
    ax = fig.add_subplot()
    for r in shown:
        edges, dens = density(x[r], ax_, bins)
        ax.stairs(dens, edges, linewidth=1.6, label=f"rank {r}")
    ax_.apply(ax)
    ax.set_xlabel(f"iteration time $T_p^k$ ({ax_.unit_label})")
    ax.set_ylabel(ax_.density_label)
    legend(ax)
    return fig


def _scatter_ranks(ax: Axes, y: np.ndarray, scale: float) -> None:
    ax.plot(np.arange(y.size), y / scale, "o", markersize=_marker_size(y.size) / 1.5, alpha=0.8)


def iteration_vs_rank(
    times: np.ndarray, iteration: int, node_ids: np.ndarray, inset_nodes: int = 10
) -> Figure:
    """T_p^k against rank p for one iteration k, with node boundaries (first nodes enlarged).

    With a single node there are no boundaries: one panel, no inset.
    """
    y = np.asarray(times)[:, iteration]
    ids = np.asarray(node_ids)
    scale, unit = unit_for(float(y.max()))
    boundaries = np.flatnonzero(np.diff(ids) != 0) + 0.5
    fig = _figure(height=3.8)
    if boundaries.size == 0:
        ax = fig.add_subplot()
        axes = [ax]
    else:
        ax, inset = fig.subplots(1, 2, width_ratios=[2, 1])
        axes = [ax, inset]
    _scatter_ranks(ax, y, scale)
    ax.set_xlabel("rank $p$")
    ax.set_ylabel(f"$T_p^k$ ({unit}), $k = {iteration}$")
    if 0 < boundaries.size <= 64:
        for b in boundaries:
            ax.axvline(b, color="0.6", linewidth=0.5)
    if boundaries.size:
        first = boundaries[:inset_nodes]
        upto = int(first[-1] + 0.5) if first.size < boundaries.size else y.size
        _scatter_ranks(inset, y[:upto], scale)
        for b in first:
            inset.axvline(b, color="k", linewidth=0.7)
        inset.set_title(f"first {min(inset_nodes, boundaries.size + 1)} nodes", fontsize="medium")
        inset.set_xlabel("rank $p$")
    for a in axes:
        lo, hi = a.get_ylim()
        if hi - lo < 1e-9 * max(abs(hi), 1e-300):
            a.set_ylim(lo * 0.95, hi * 1.05)
    return fig


def _block_mean(x: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, int, int]:
    """Means of fr x fc blocks, at most ``rows`` x ``cols`` of them; a band of block rows at a
    time, so that a transposed or cropped view of a whole trace is never copied whole."""
    fr = max(1, int(np.ceil(x.shape[0] / rows)))
    fc = max(1, int(np.ceil(x.shape[1] / cols)))
    r, c = x.shape[0] // fr * fr, x.shape[1] // fc * fc
    out = np.empty((r // fr, c // fc))
    band = max(1, HISTOGRAM_BLOCK // max(fr * c, 1))  # block rows per pass
    for i in range(0, r // fr, band):
        part = np.ascontiguousarray(x[i * fr:min(r, (i + band) * fr), :c])
        out[i:i + part.shape[0] // fr] = part.reshape(-1, fr, c // fc, fc).mean(axis=(1, 3))
    return out, fr, fc


def colour_limits(times: np.ndarray, iterations: np.ndarray | None = None) -> tuple[float, float]:
    """The colour range of ``colormap`` (s): ``COLOUR_QUANTILES`` of the values shown."""
    x = np.asarray(times)
    if iterations is not None:
        x = x[:, iterations]
    img, _, _ = _block_mean(x.T, MAX_IMAGE_ROWS, MAX_IMAGE_ROWS)
    lo, hi = np.quantile(img, COLOUR_QUANTILES)
    return float(lo), float(hi)


def colour_is_log(lo: float, hi: float) -> bool:
    """A logarithmic colour scale when the colour range spans ``LOG_COLOUR_RATIO`` or more."""
    return lo > 0 and hi / lo >= LOG_COLOUR_RATIO


def colormap(times: np.ndarray, iterations: np.ndarray | None = None) -> Figure:
    """Colormap of T_p^k over iterations (rows, labelled with their real k) and ranks (columns).

    Colours are clipped to ``COLOUR_QUANTILES`` of the values shown (``colour_limits``), on a
    logarithmic scale when they span orders of magnitude (``colour_is_log``).
    """
    x = np.asarray(times)
    ks_shown = np.arange(x.shape[1]) if iterations is None else np.asarray(iterations)
    img, fr, _ = _block_mean(x[:, ks_shown].T, MAX_IMAGE_ROWS, MAX_IMAGE_ROWS)
    lo, hi = colour_limits(x, ks_shown)
    scale, unit = unit_for(hi)
    norm = LogNorm(lo / scale, hi / scale) if colour_is_log(lo, hi) else Normalize(
        lo / scale, hi / scale
    )
    fig = _figure(height=5.0)
    ax = fig.add_subplot()
    mesh = ax.imshow(
        img / scale,
        aspect="auto",
        origin="lower",
        cmap="coolwarm",
        norm=norm,
        interpolation="nearest",
        extent=(-0.5, x.shape[0] - 0.5, -0.5, img.shape[0] - 0.5),
    )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))

    def k_of(row: float, _pos: object = None) -> str:
        i = round(row) * fr
        return str(int(ks_shown[i])) if 0 <= i < ks_shown.size else ""

    ax.yaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(k_of))
    ax.set_xlabel("rank $p$")
    ax.set_ylabel("iteration $k$" + (" (selected)" if iterations is not None else ""))
    scale_name = ", log scale" if isinstance(norm, LogNorm) else ""
    bar = fig.colorbar(mesh, ax=ax, label=f"$T_p^k$ ({unit}{scale_name}), clipped", extend="both")
    if isinstance(norm, LogNorm):
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    return fig


def ks_heatmap(result: KSPairwise) -> Figure:
    """D of every rank pair; pairs above the rejection threshold hatched, threshold on the bar."""
    d = result.statistics
    r = result.ranks.size
    fig = _figure(6.6, 5.6)
    ax = fig.add_subplot()
    top = max(float(d.max()), 2.0 * result.threshold)
    # blue below the threshold, red above it, white at it; rejected pairs also hatched
    norm = TwoSlopeNorm(vmin=0.0, vcenter=result.threshold, vmax=top)
    mesh = ax.imshow(d, cmap="RdBu_r", norm=norm, interpolation="nearest")
    rejected = np.ma.masked_where(~result.rejected, np.ones_like(d))
    ax.pcolor(
        np.arange(r + 1) - 0.5,
        np.arange(r + 1) - 0.5,
        rejected,
        hatch="//",
        facecolor="none",
        edgecolor="0.15",
        linewidth=0.0,
    )
    labels = result.ranks

    def rank_of(i: float, _pos: object = None) -> str:
        j = round(i)
        return str(int(labels[j])) if 0 <= j < r else ""

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=min(r, 16), integer=True))
        axis.set_major_formatter(FuncFormatter(rank_of))
    ax.set_xlabel("rank")
    ax.set_ylabel("rank")
    bar = fig.colorbar(mesh, ax=ax, label="KS statistic $D$")
    bar.ax.axhline(result.threshold, color="red", linewidth=2.0)
    thr = result.threshold
    bar.set_ticks([0.0, thr / 2, thr, (thr + top) / 2, top])
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.3g}"))
    bar.ax.text(
        -0.3, result.threshold, f"reject\n(α = {result.alpha:g})", color="red",
        ha="right", va="center", fontsize="small", transform=bar.ax.get_yaxis_transform(),
    )
    return fig
