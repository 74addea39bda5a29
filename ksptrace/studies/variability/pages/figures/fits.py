"""The figures of the fits: the bulk fit of iteration times, the uniform model's fits and
parameters per iteration, cycle histograms, and the Johnson S_U scaling curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import scipy.stats as st
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ksptrace.errors import AnalysisError
from ksptrace.studies.drawing import _figure
from ksptrace.studies.variability.pages.figures.axes import (
    LOG_FLOOR,
    LOG_SPREAD,
    TimeAxis,
    is_constant,
    legend,
    log_time_ticks,
    time_axis,
    unit_for,
)
from ksptrace.studies.variability.pages.figures.per_run import density, pdf_curve
from ksptrace.studies.variability.stats.cycles import CycleLayout
from ksptrace.studies.variability.stats.fitting import FitRanking, JohnsonSU
from ksptrace.studies.variability.stats.models import UniformFits
from ksptrace.studies.variability.stats.montecarlo import NormalLimit, ParameterFits
from ksptrace.studies.variability.stats.ordered import OrderedRows


def bulk_fit(
    ranking: FitRanking,
    top: int = 4,
    *,
    values: np.ndarray | OrderedRows | None = None,
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
        edges, dens = density(values, axis, bins)
    ceiling = float(dens.max())
    ax.stairs(dens, edges, fill=True, alpha=0.35, color="0.4", label="data")
    for f in [f for f in ranking.fits if f.ok][:top]:
        remark = (remarks or {}).get(f.name)
        label = f"{f.name} (SSE {f.sse:.3g}" + (f"; {remark})" if remark else ")")
        pdf_curve(ax, f.frozen(), axis, label, ceiling)
    _finish_density(ax, axis, ceiling, "iteration time $T_p^k$")
    return fig


def _finish_density(ax: Axes, axis: TimeAxis, ceiling: float, quantity: str) -> None:
    """A density panel's axes: the time axis, room above the tallest bar, labels, legend."""
    axis.apply(ax)
    ax.set_ylim(0, 1.25 * ceiling)
    ax.set_xlabel(f"{quantity} ({axis.unit_label})")
    ax.set_ylabel(axis.density_label)
    legend(ax, fontsize="small")


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
    legend(ax)
    return fig


def _parameter_panel(
    ax: Axes, data: np.ndarray, name: str, jsu: JohnsonSU | None, normal: NormalLimit | None,
    bins: int,
) -> TimeAxis:
    axis = time_axis(data)
    edges, dens = density(data, axis, bins)
    ceiling = float(dens.max())
    ax.stairs(dens, edges, fill=True, alpha=0.45, color="0.6", label="data")
    if normal is not None:
        pdf_curve(ax, st.norm(normal.mean, normal.std), axis, "normal limit (JSU collapsed)",
                  ceiling)
    elif jsu is not None:
        pdf_curve(ax, jsu.frozen(), axis, "Johnson $S_U$", ceiling)
    _finish_density(ax, axis, ceiling, name)
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
    kept: OrderedRows | None = None,
) -> Figure:
    """Histograms of iterations at chosen restart-cycle positions, next to the bulk one.
    ``kept``: the kept iterations' rows sorted, if made already (no copy of them then)."""
    fig = _figure(height=3.8)
    ax = fig.add_subplot()
    x = np.asarray(times)
    keep = layout.keep(True)
    bulk: np.ndarray | OrderedRows
    if kept is not None and kept.shape == (x.shape[0], keep.size):
        bulk, flat = kept, kept.raw.reshape(-1)
    else:
        bulk = flat = x[:, keep].ravel() if keep.size < x.shape[1] else x.ravel()
    axis = axis or time_axis(flat[:: max(1, flat.size // 200_000)])
    edges, dens = density(bulk, axis, bins)
    ax.stairs(dens, edges, color="k", linewidth=1.8, label="all iterations")
    for pos in positions:
        sel = layout.at_position(pos)
        if sel.size:
            edges, dens = density(x[:, sel], axis, bins)
            ax.stairs(dens, edges, linewidth=1.4,
                      label=f"$k$ mod {layout.cycle_length} = {pos}")
    axis.apply(ax)
    ax.set_xlabel(f"iteration time $T_p^k$ ({axis.unit_label})")
    ax.set_ylabel(axis.density_label)
    legend(ax, fontsize="small")
    return fig


def scaling_curves(entries: Sequence[tuple[str, ParameterFits]], across: str) -> Figure:
    """Johnson S_U pdfs of a_k and s_k for several configurations (across P or n, Figs. 8-9)."""
    fig = _figure(height=3.6)
    axes = fig.subplots(1, 2)
    for which, ax in zip(("lower", "span"), axes, strict=True):
        jsu_curves(ax, [(label, getattr(p, which)) for label, p in entries],
                    "$a_k$" if which == "lower" else "$s_k$")
    fig.suptitle(f"Johnson $S_U$ fits across {across}")
    return fig


def no_fit(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no Johnson $S_U$ fit", ha="center", va="center", transform=ax.transAxes)
    ax.set_yticks([])


def jsu_curves(ax: Axes, entries: Sequence[tuple[str, JohnsonSU]], name: str) -> None:
    dists = [(label, j.frozen()) for label, j in entries]
    if not dists:
        no_fit(ax)
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
    legend(ax, fontsize="small")
