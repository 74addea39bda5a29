"""The paper's figures, one function each. Every function returns a matplotlib Figure built
without pyplot (no global state, Agg canvas), so that reports can be drawn off-screen.

Times come in seconds and are shown in the unit that suits them (s, ms, µs, ns), densities in
1/unit. Long tails are clipped at a stated quantile (``time_axis``) so that the bulk fills the
axis; the caller says so in the caption with ``TimeAxis.describe``. Figures are about 1050 px
wide (10.5 in at 100 dpi), the width of the report's column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.stats as st
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm, Normalize, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from ksptrace.errors import AnalysisError
from ksptrace.studies.drawing import _figure
from ksptrace.studies.variability.cycles import CycleLayout
from ksptrace.studies.variability.fitting import FitRanking, JohnsonSU
from ksptrace.studies.variability.ks import KSPairwise
from ksptrace.studies.variability.models import UniformFits
from ksptrace.studies.variability.montecarlo import NormalLimit, ParameterFits

MAX_IMAGE_ROWS = 1024
"""Colormaps of larger traces are shown as block means (rows and columns)."""
BULK_QUANTILE = 0.99
"""A time axis shows at least this quantile beyond a third of its width."""
CLIP_QUANTILES = (0.999, 0.995, 0.99)
LOG_COLOUR_RATIO = 20.0
"""Colour ranges whose ends are this far apart use a logarithmic colour scale."""
LOG_SPREAD = 30.0
"""Values whose 99th percentile is this many times their 5th get a logarithmic time axis."""
LOG_FLOOR = 1e-9
"""A logarithmic time axis starts at 1 ns at the lowest; smaller values are 0 up to rounding."""
MIN_IQR_SHARE = 0.08
"""A linear time axis gives the interquartile range at least this share of its width."""
"""Upper quantiles tried in turn when the full range squeezes the bulk (long tails)."""
COLOUR_QUANTILES = (0.01, 0.99)
"""Colour range of the colormap: these quantiles of the values shown."""
CONSTANT_TOLERANCE = 1e-8
"""Values whose range is below this fraction of their size count as constant (stamp rounding)."""
UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))





def _legend(ax: Any, **kwargs: Any) -> None:
    """A legend only when something is labelled (matplotlib warns on stderr otherwise)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kwargs)



def unit_for(seconds: float) -> tuple[float, str]:
    """(seconds per unit, unit name) of the largest unit in which ``seconds`` is >= 1."""
    size = abs(seconds)
    if size == 0 or not np.isfinite(size):
        return UNITS[0]
    for scale, name in UNITS:
        if size >= scale:
            return scale, name
    return UNITS[-1]


def fmt_time(seconds: float) -> str:
    """A time in the unit that suits it, 3 significant digits: '28 ms', '398 µs'."""
    scale, name = unit_for(seconds)
    return f"{seconds / scale:.3g} {name}"


@dataclass(frozen=True)
class TimeAxis:
    """The range a time axis shows, its unit and scale, and what it leaves out.

    On a linear axis a long tail may be clipped at ``clip_quantile``; densities are in
    1/unit. On a logarithmic axis (a bulk and a tail orders of magnitude apart) every positive
    value is shown and densities are per decade, x f(x) ln 10, so that areas stay faithful.
    """

    lo: float
    """Left end (s)."""
    hi: float
    """Right end (s)."""
    scale: float
    """Seconds per unit."""
    unit: str
    clip_quantile: float | None
    """The quantile the linear axis was clipped at, None when no tail is cut off."""
    beyond: int
    """Values beyond ``hi``."""
    total: int
    largest: float
    """The largest value (s)."""
    log: bool = False
    nonpositive: int = 0
    """Values below ``LOG_FLOOR`` (0 up to timer resolution), not shown on a logarithmic axis."""

    @property
    def unit_label(self) -> str:
        return "log scale" if self.log else self.unit

    @property
    def density_label(self) -> str:
        return "density per decade" if self.log else f"density (1/{self.unit})"

    def describe(self) -> str:
        """One sentence for a caption: the unit and scale, and what is not shown."""
        if self.log:
            zeros = (
                f"; {self.nonpositive} values below 1 ns (0 up to the timer's resolution) are "
                "not shown" if self.nonpositive else ""
            )
            return (
                "Logarithmic time axis (the bulk and the tail are orders of magnitude apart, "
                f"up to {fmt_time(self.largest)}), density per decade{zeros}."
            )
        if self.clip_quantile is None:
            return f"Times in {self.unit}, density in 1/{self.unit}; every value is shown."
        q = f"{100 * self.clip_quantile:g}"
        return (
            f"Times in {self.unit}, density in 1/{self.unit}; long tail clipped at the {q}th "
            f"percentile ({fmt_time(self.hi)}): {self.beyond} of {self.total} values "
            f"({100 * self.beyond / max(self.total, 1):.2g} %) lie beyond, the largest "
            f"{fmt_time(self.largest)}."
        )

    def limits(self) -> tuple[float, float]:
        """The axis limits in units, with a margin."""
        if self.log:
            return self.lo / 1.15 / self.scale, self.hi * 1.15 / self.scale
        pad = 0.02 * (self.hi - self.lo)
        return (self.lo - pad) / self.scale, (self.hi + pad) / self.scale

    def edges(self, bins: int) -> np.ndarray:
        """Bin edges (s) over the axis range."""
        if self.log:
            return np.geomspace(self.lo, self.hi, bins + 1)
        return np.linspace(self.lo, self.hi, bins + 1)

    def grid(self, points: int = 400) -> np.ndarray:
        """Points (s) at which to draw a pdf."""
        return self.edges(points - 1)

    def apply(self, ax: Axes) -> None:
        """Set the scale and limits of ``ax``'s x axis."""
        if self.log:
            log_time_ticks(ax)
        ax.set_xlim(*self.limits())


def log_time_ticks(ax: Axes, which: str = "x") -> None:
    """A logarithmic axis in seconds whose ticks carry their own unit: '10 µs', '1 ms'."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_time(v)))
    axis.set_minor_formatter(NullFormatter())


def _bulk_fits(x: np.ndarray, lo: float, hi: float, bulk: float, iqr: float) -> bool:
    """True when the 99th percentile lies beyond a third of [lo, hi] and the interquartile
    range covers at least ``MIN_IQR_SHARE`` of it."""
    width = hi - lo
    return bulk - lo >= width / 3 and iqr >= MIN_IQR_SHARE * width


def time_axis(values: np.ndarray) -> TimeAxis:
    """The axis that shows ``values`` with the bulk spread out.

    Values whose 99th and 5th percentiles are ``LOG_SPREAD`` or more apart (a bulk and a tail
    orders of magnitude apart, as with millisecond detours) get a logarithmic axis over every
    value above 1 ns. Otherwise the full linear range is kept when its 99th percentile lies
    beyond a third of it and the interquartile range covers at least ``MIN_IQR_SHARE`` of it;
    otherwise the first of ``CLIP_QUANTILES`` that satisfies both; otherwise the log axis.
    """
    x = finite(values)
    if x.size == 0:
        raise AnalysisError("no finite times to draw; check the trace for NaN or inf")
    lo, largest = float(x.min()), float(x.max())
    if is_constant(x):
        raise AnalysisError(
            f"every value equals {fmt_time(lo)}, a histogram would be one bar; leave it out"
        )
    q05, q25, q75, bulk, *clips = np.quantile(
        _sample(x), (0.05, 0.25, 0.75, BULK_QUANTILE, *CLIP_QUANTILES)
    )
    iqr = float(q75 - q25)
    hi: float | None = None
    clip = None
    if q05 >= LOG_FLOOR and bulk / q05 >= LOG_SPREAD:
        pass  # several decades: the log axis below
    elif _bulk_fits(x, lo, largest, bulk, iqr):
        hi = largest
    else:
        for q, value in zip(CLIP_QUANTILES, clips, strict=True):
            if value > lo and _bulk_fits(x, lo, float(value), bulk, iqr):
                hi, clip = float(value), q
                break
    if hi is not None:
        scale, unit = unit_for(hi)
        return TimeAxis(lo=lo, hi=hi, scale=scale, unit=unit, clip_quantile=clip,
                        beyond=int((x > hi).sum()), total=int(x.size), largest=largest)
    above = x >= LOG_FLOOR  # a mask, not a copy of the values
    count = int(np.count_nonzero(above))
    if count < 2:
        raise AnalysisError(
            "fewer than two values above 1 ns (the others are 0 up to rounding); leave the "
            "histogram out"
        )
    low = float(np.min(x, where=above, initial=np.inf))
    return TimeAxis(lo=low, hi=largest, scale=1.0, unit="s", clip_quantile=None, beyond=0,
                    total=int(x.size), largest=largest, log=True,
                    nonpositive=int(x.size - count))


AXIS_SAMPLE = 1 << 21
"""An axis is chosen from the quantiles of at most this many values (a seeded subsample of a
larger set: the quantiles that place an axis move by far less than a pixel)."""


def _sample(x: np.ndarray) -> np.ndarray:
    if x.size <= AXIS_SAMPLE:
        return x
    return x[np.random.default_rng(0).integers(0, x.size, AXIS_SAMPLE)]


HISTOGRAM_BLOCK = 1 << 20
"""Values binned per pass: a histogram of a paper-scale trace never copies the whole trace."""


def binned_counts(values: np.ndarray, bins: int, lo: float, hi: float, log: bool = False,
                  floor: float | None = None, ceiling: float | None = None,
                  ) -> tuple[np.ndarray, int]:
    """(int64 counts of ``bins`` equal bins over [lo, hi] (in log10 when ``log``), values
    below ``floor`` left out and counted), one block at a time. Each value falls in the bin
    one ``np.histogram`` call over all values would give: the bins do not depend on the block.
    Values ``ceiling`` and above count in the last bin."""
    x = np.asarray(values, dtype=np.float64).ravel()
    counts = np.zeros(bins, dtype=np.int64)
    below = 0
    for start in range(0, x.size, HISTOGRAM_BLOCK):
        block = x[start:start + HISTOGRAM_BLOCK]
        if floor is not None:
            keep = block >= floor
            below += int(block.size - np.count_nonzero(keep))
            block = block[keep]
        if ceiling is not None:
            block = np.minimum(block, ceiling)
        if log:
            with np.errstate(divide="ignore", invalid="ignore"):
                block = np.log10(block)
        c, _ = np.histogram(block, bins=bins, range=(lo, hi))
        counts += c
    return counts, below


def finite(values: np.ndarray) -> np.ndarray:
    """The finite values, flattened; no copy when all are finite (the usual case)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    ok = np.isfinite(x)
    return x if ok.all() else x[ok]


def is_constant(values: np.ndarray) -> bool:
    """True when the values do not vary beyond rounding (a histogram would be one bar)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size >= 2:
        lo, hi = float(x.min()), float(x.max())
        if np.isfinite(lo) and np.isfinite(hi):  # no copy of a big, finite array
            return hi - lo <= CONSTANT_TOLERANCE * max(abs(lo), abs(hi))
    x = finite(x)
    if x.size < 2:
        return True
    return float(np.ptp(x)) <= CONSTANT_TOLERANCE * float(np.abs(x).max())


def _density(values: np.ndarray, axis: TimeAxis, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(edges in units, density) over the axis range, normalised by the count of all values:
    in 1/unit on a linear axis, per decade on a logarithmic one."""
    x = np.asarray(values, dtype=np.float64).ravel()
    edges = axis.edges(bins)
    # equal bins in the axis' own scale: numpy's arithmetic binning, no binary search per value
    if axis.log:
        counts, _ = binned_counts(x, bins, np.log10(axis.lo), np.log10(axis.hi), log=True)
    else:
        counts, _ = binned_counts(x, bins, axis.lo, axis.hi)
    widths = np.diff(np.log10(edges)) if axis.log else np.diff(edges / axis.scale)
    return edges / axis.scale, counts / (max(x.size, 1) * widths)


def _pdf(ax: Axes, dist: Any, axis: TimeAxis, label: str, ceiling: float) -> None:
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
        edges, dens = _density(x[r], ax_, bins)
        ax.stairs(dens, edges, linewidth=1.6, label=f"rank {r}")
    ax_.apply(ax)
    ax.set_xlabel(f"iteration time $T_p^k$ ({ax_.unit_label})")
    ax.set_ylabel(ax_.density_label)
    _legend(ax)
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


def bulk_fit(
    ranking: FitRanking,
    top: int = 4,
    *,
    values: np.ndarray | None = None,
    axis: TimeAxis | None = None,
    bins: int = 120,
    remarks: Mapping[str, str] | None = None,
) -> Figure:
    """Histogram of all (kept) iteration times with the best fitted pdfs (the paper's Fig. 5).

    ``remarks`` adds a word to a family's legend entry (e.g. "flagged: mean off").
    """
    fig = _figure(height=4.0)
    ax = fig.add_subplot()
    if values is None:
        h = ranking.histogram
        lo, hi = float(h.edges[0]), float(h.edges[-1])
        scale, unit = unit_for(hi)
        axis = axis or TimeAxis(lo, hi, scale, unit, None, 0, 0, hi)
        edges, dens = h.edges / axis.scale, h.density * axis.scale
    else:
        axis = axis or time_axis(values)
        edges, dens = _density(values, axis, bins)
    ceiling = float(dens.max())
    ax.stairs(dens, edges, fill=True, alpha=0.35, color="0.4", label="data")
    for f in ranking.fits[:top]:
        remark = (remarks or {}).get(f.name)
        label = f"{f.name} (SSE {f.sse:.3g}" + (f"; {remark})" if remark else ")")
        _pdf(ax, f.frozen(), axis, label, ceiling)
    axis.apply(ax)
    ax.set_ylim(0, 1.25 * ceiling)
    ax.set_xlabel(f"iteration time $T_p^k$ ({axis.unit_label})")
    ax.set_ylabel(axis.density_label)
    _legend(ax, fontsize="small")
    return fig


def uniform_fits(times: np.ndarray, iterations: Sequence[int], bins: int = 30) -> Figure:
    """Histograms over p of a few iterations with their uniform fits on [a_k, a_k + s_k].

    Iterations whose values are all equal (s_k = 0) have no uniform density and are skipped.
    """
    x = np.asarray(times)
    cols = [k for k in iterations if not is_constant(x[:, k])]
    if not cols:
        raise AnalysisError("every chosen iteration has s_k = 0: no uniform fit to draw")
    scale, unit = unit_for(float(x[:, cols].max()))
    fig = _figure(height=3.8)
    ax = fig.add_subplot()
    bins = min(bins, max(8, 2 * int(np.ceil(np.sqrt(x.shape[0])))))
    top = 0.0
    for k in cols:
        col = x[:, k] / scale
        a, b = float(col.min()), float(col.max())
        height = 1.0 / (b - a)
        (line,) = ax.plot([a, a, b, b], [0, height, height, 0], linewidth=1.8)
        dens, _, _ = ax.hist(
            col, bins=bins, density=True, alpha=0.35, color=line.get_color(),
            label=f"$k = {k}$: $U(a_k,\\ a_k + s_k)$",
        )
        top = max(top, height, float(np.max(dens)))
    ax.set_ylim(0, 1.15 * top)
    ax.set_xlabel(f"$T_p^k$ ({unit})")
    ax.set_ylabel(f"density over $p$ (1/{unit})")
    _legend(ax)
    return fig


def _parameter_panel(
    ax: Axes, data: np.ndarray, name: str, jsu: JohnsonSU | None, normal: NormalLimit | None,
    bins: int,
) -> TimeAxis:
    axis = time_axis(data)
    edges, dens = _density(data, axis, bins)
    ceiling = float(dens.max())
    ax.stairs(dens, edges, fill=True, alpha=0.45, color="0.6", label="data")
    if normal is not None:
        _pdf(ax, st.norm(normal.mean, normal.std), axis, "normal limit (JSU collapsed)", ceiling)
    elif jsu is not None:
        _pdf(ax, jsu.frozen(), axis, "Johnson $S_U$", ceiling)
    axis.apply(ax)
    ax.set_ylim(0, 1.25 * ceiling)
    ax.set_xlabel(f"{name} ({axis.unit_label})")
    ax.set_ylabel(axis.density_label)
    _legend(ax, fontsize="small")
    return axis


def uniform_parameters(
    fits: UniformFits,
    params: ParameterFits | None,
    bins: int = 60,
    *,
    keep: np.ndarray | None = None,
    panels: Sequence[str] = ("lower", "span"),
) -> Figure:
    """Histograms of a_k and/or s_k (kept iterations) with their Johnson S_U fits (Fig. 7)."""
    if not panels:
        raise AnalysisError("no panel to draw: pass 'lower', 'span' or both")
    fig = _figure(height=3.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, which in zip(axes, panels, strict=True):
        data = getattr(fits, which)
        data = data if keep is None else data[keep]
        jsu = None if params is None else getattr(params, which)
        normal = None if params is None else getattr(params, f"{which}_normal")
        name = "minimum $a_k$" if which == "lower" else "span $s_k$"
        _parameter_panel(ax, data, name, jsu, normal, bins)
    return fig


def cycle_histograms(
    times: np.ndarray,
    layout: CycleLayout,
    positions: Sequence[int],
    bins: int = 80,
    *,
    axis: TimeAxis | None = None,
) -> Figure:
    """Histograms of iterations at chosen restart-cycle positions, next to the bulk one."""
    fig = _figure(height=3.8)
    ax = fig.add_subplot()
    x = np.asarray(times)
    keep = layout.keep(True)
    bulk = x[:, keep].ravel() if keep.size < x.shape[1] else x.ravel()
    axis = axis or time_axis(bulk[:: max(1, bulk.size // 200_000)])
    edges, dens = _density(bulk, axis, bins)
    ax.stairs(dens, edges, color="k", linewidth=1.8, label="all iterations")
    for pos in positions:
        sel = layout.at_position(pos)
        if sel.size:
            edges, dens = _density(x[:, sel], axis, bins)
            ax.stairs(dens, edges, linewidth=1.4,
                      label=f"$k$ mod {layout.cycle_length} = {pos}")
    axis.apply(ax)
    ax.set_xlabel(f"iteration time $T_p^k$ ({axis.unit_label})")
    ax.set_ylabel(axis.density_label)
    _legend(ax, fontsize="small")
    return fig


def scaling_curves(entries: Sequence[tuple[str, ParameterFits]], across: str) -> Figure:
    """Johnson S_U pdfs of a_k and s_k for several configurations (across P or n, Figs. 8-9)."""
    fig = _figure(height=3.6)
    axes = fig.subplots(1, 2)
    for which, ax in zip(("lower", "span"), axes, strict=True):
        _jsu_curves(ax, [(label, getattr(p, which)) for label, p in entries],
                    "$a_k$" if which == "lower" else "$s_k$")
    fig.suptitle(f"Johnson $S_U$ fits across {across}")
    return fig


def _no_fit(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no Johnson $S_U$ fit", ha="center", va="center", transform=ax.transAxes)
    ax.set_yticks([])


def _jsu_curves(ax: Axes, entries: Sequence[tuple[str, JohnsonSU]], name: str) -> None:
    dists = [(label, j.frozen()) for label, j in entries]
    if not dists:
        _no_fit(ax)
        return
    lo = min(float(d.ppf(0.005)) for _, d in dists)
    hi = max(float(d.ppf(0.995)) for _, d in dists)
    low = min(float(d.ppf(0.25)) for _, d in dists)
    if low >= LOG_FLOOR and hi / low >= LOG_SPREAD:
        # long tails: a log axis with densities per decade, as for the histograms (the part
        # of a fit below a thirtieth of its lower quartile, negative values included, is cut)
        grid = np.geomspace(max(lo, low / 30, LOG_FLOOR), hi, 400)
        for label, d in dists:
            ax.plot(grid, d.pdf(grid) * grid * np.log(10.0), linewidth=1.8, label=label)
        log_time_ticks(ax)
        ax.set_xlabel(f"{name} (log scale)")
        ax.set_ylabel("Johnson $S_U$ density per decade")
    else:
        scale, unit = unit_for(hi)
        grid = np.linspace(lo, hi, 400)
        for label, d in dists:
            ax.plot(grid / scale, d.pdf(grid) * scale, linewidth=1.8, label=label)
        ax.set_xlabel(f"{name} ({unit})")
        ax.set_ylabel(f"Johnson $S_U$ density (1/{unit})")
    _legend(ax, fontsize="small")


@dataclass(frozen=True)
class ScalingPoint:
    """One configuration in a scaling plot: its x (P or n) and its fitted parameters."""

    x: float
    mean: float
    """Mean of the kept T_p^k (s)."""
    std: float
    lower: JohnsonSU | None
    span: JohnsonSU | None


def _log_x(ax: Axes, xs: Sequence[float]) -> None:
    """A log axis when the values span a factor 4 or more; ticks at the values themselves."""
    if min(xs) > 0 and max(xs) / min(xs) >= 4:
        ax.set_xscale("log")
        ax.minorticks_off()
    pad = 0.05 * (max(xs) - min(xs)) if ax.get_xscale() == "linear" else 0.0
    ax.set_xticks(list(xs), [f"{x:g}" for x in xs])
    if ax.get_xscale() == "log":
        ax.set_xlim(min(xs) / 1.2, max(xs) * 1.2)
    else:
        ax.set_xlim(min(xs) - pad, max(xs) + pad)


def scaling(points: Sequence[ScalingPoint], across: str) -> Figure:
    """Model parameters against P or n: mean and std of T, Johnson S_U shapes, and pdfs."""
    pts = sorted(points, key=lambda p: p.x)
    xs = [p.x for p in pts]
    fig = _figure(height=7.0)
    (moments, shapes), (lower, span) = fig.subplots(2, 2)
    scale, unit = unit_for(max(p.mean + p.std for p in pts))
    moments.errorbar(xs, [p.mean / scale for p in pts], yerr=[p.std / scale for p in pts],
                     fmt="o-", markersize=7, capsize=4, label="mean of $T_p^k$ ± std")
    moments.plot(xs, [p.std / scale for p in pts], "s--", markersize=6, label="std of $T_p^k$")
    moments.set_ylabel(f"time ({unit})")
    moments.set_ylim(bottom=0)
    _legend(moments, fontsize="small", loc="best")
    for which, marker in (("lower", "o"), ("span", "s")):
        sub = [(p.x, getattr(p, which)) for p in pts if getattr(p, which) is not None]
        name = "a_k" if which == "lower" else "s_k"
        shapes.plot([x for x, _ in sub], [j.a for _, j in sub], marker + "-", markersize=7,
                    label=f"shape $a$ of ${name}$")
        shapes.plot([x for x, _ in sub], [j.b for _, j in sub], marker + ":", markersize=7,
                    label=f"shape $b$ of ${name}$")
    shapes.set_ylabel("Johnson $S_U$ shape")
    if shapes.get_legend_handles_labels()[0] and any(len(ln.get_xdata()) for ln in shapes.lines):
        _legend(shapes, fontsize="small")
    else:
        _no_fit(shapes)
    for ax in (moments, shapes):
        _log_x(ax, xs)
        ax.set_xlabel(across)
    for ax, which, name in ((lower, "lower", "$a_k$"), (span, "span", "$s_k$")):
        _jsu_curves(ax, [(f"{across} = {p.x:g}", getattr(p, which)) for p in pts
                         if getattr(p, which) is not None], name)
    return fig


@dataclass(frozen=True)
class SolverTimes:
    """Measured and modelled KSPSolve times of one solver (s); None where not computed."""

    label: str
    measured: float
    lockstep_sum: float
    rank_sum_max: float
    nonstationary: float
    stationary: float | None
    stationary_name: str | None
    simulated: float | None
    simulated_stderr: float | None


def solver_times(rows: Sequence[SolverTimes]) -> Figure:
    """Measured KSPSolve against the models, one column per solver (the paper's Fig. 11 idea)."""
    fig = _figure(height=4.2)
    ax = fig.add_subplot()
    values = [v for r in rows for v in (r.measured, r.lockstep_sum, r.rank_sum_max,
                                        r.nonstationary, r.stationary, r.simulated)
              if v is not None and v > 0]
    log = max(values) / min(values) > 20
    scale, unit = (1.0, "log scale") if log else unit_for(max(values))
    series: list[tuple[str, str, list[float | None]]] = [
        ("measured KSPSolve", "k*", [r.measured for r in rows]),
        ("measured $\\Sigma_k\\ \\mathrm{max}_p\\ T_p^k$", "kx", [r.lockstep_sum for r in rows]),
        ("measured $\\mathrm{max}_p\\ \\Sigma_k\\ T_p^k$", "k+", [r.rank_sum_max for r in rows]),
        ("non-stationary model", "o", [r.nonstationary for r in rows]),
        ("best stationary model", "s", [r.stationary for r in rows]),
    ]
    offsets = np.linspace(-0.25, 0.25, len(series) + 1)
    for (label, fmt, ys), off in zip(series, offsets, strict=False):
        xs = [i + off for i, y in enumerate(ys) if y is not None]
        ax.plot(xs, [y / scale for y in ys if y is not None], fmt, markersize=10,
                linestyle="none", label=label)
    sim = [(i + offsets[-1], r.simulated, r.simulated_stderr) for i, r in enumerate(rows)
           if r.simulated is not None]
    if sim:
        ax.errorbar([s[0] for s in sim], [s[1] / scale for s in sim],
                    yerr=[(s[2] or 0.0) / scale for s in sim], fmt="D", markersize=8,
                    capsize=4, label="Monte Carlo ± s.e.")
    ax.set_xticks(range(len(rows)), [r.label for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    if log:
        log_time_ticks(ax, "y")
    ax.set_ylabel(f"KSPSolve time ({unit})")
    _legend(ax, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def solver_distributions(
    edges: np.ndarray, entries: Sequence[tuple[str, Sequence[np.ndarray]]],
    names: Sequence[str],
) -> Figure:
    """Per-decade densities of several quantities (panels) for several solvers (Figs. 10-11).

    ``edges`` are common log-spaced bin edges (s); each entry gives a label and one count
    array per panel. The x axes are logarithmic, so solvers orders of magnitude apart share them.
    """
    fig = _figure(height=3.8)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    decades = np.diff(np.log10(edges))
    for p, (ax, name) in enumerate(zip(axes, names, strict=True)):
        used = np.zeros(edges.size - 1, dtype=bool)
        for label, counts in entries:
            c = np.asarray(counts[p], dtype=np.float64)
            if c.sum() == 0:
                continue
            used |= c > 0
            ax.stairs(c / (c.sum() * decades), edges, linewidth=1.6, label=label)
        if used.any():
            first, last = np.flatnonzero(used)[[0, -1]]
            ax.set_xlim(edges[max(first - 1, 0)], edges[min(last + 2, edges.size - 1)])
        log_time_ticks(ax)
        ax.set_xlabel(f"{name} (log scale)")
        ax.set_ylabel("density per decade")
        _legend(ax, fontsize="small")
    return fig
