"""The figures across runs: how a statistic scales with P or n, and the solvers' KSPSolve times
and their distributions side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ksptrace.studies.drawing import _figure
from ksptrace.studies.variability.pages import jsu_cells
from ksptrace.studies.variability.pages.figures.axes import legend, log_time_ticks, unit_for
from ksptrace.studies.variability.pages.figures.fits import jsu_curves
from ksptrace.studies.variability.stats.fitting import JohnsonSU


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
    """Model parameters against P or n: mean and std of T, Johnson S_U shapes, and pdfs. A
    panel with nothing to show (no fit of aₖ or sₖ anywhere; sₖ = 0 at P = 1) is left out; a
    fit at the lognormal limit has no shape a to draw (:mod:`..jsu_cells`)."""
    pts = sorted(points, key=lambda p: p.x)
    xs = [p.x for p in pts]
    kinds = [w for w in ("lower", "span") if any(getattr(p, w) is not None for p in pts)]
    count = 1 + (1 + len(kinds) if kinds else 0)
    fig = _figure(height=7.0 if count > 2 else 3.6)
    grid = fig.add_gridspec(2 if count > 2 else 1, 2)
    moments = fig.add_subplot(grid[0, 0] if count > 1 else grid[0, :])
    scale, unit = unit_for(max(p.mean + p.std for p in pts))
    moments.errorbar(xs, [p.mean / scale for p in pts], yerr=[p.std / scale for p in pts],
                     fmt="o-", markersize=7, capsize=4, label="mean of $T_p^k$ ± std")
    moments.plot(xs, [p.std / scale for p in pts], "s--", markersize=6, label="std of $T_p^k$")
    moments.set_ylabel(f"time ({unit})")
    moments.set_ylim(bottom=0)
    legend(moments, fontsize="small", loc="best")
    axes = [moments]
    if kinds:
        shapes = fig.add_subplot(grid[0, 1])
        axes.append(shapes)
        for which, marker in (("lower", "o"), ("span", "s")):
            sub = [(p.x, getattr(p, which)) for p in pts if getattr(p, which) is not None]
            name = "a_k" if which == "lower" else "s_k"
            known = [(x, j) for x, j in sub if jsu_cells.form(j, None) != jsu_cells.LOGNORMAL]
            shapes.plot([x for x, _ in known], [j.a for _, j in known], marker + "-",
                        markersize=7, label=f"shape $a$ of ${name}$")
            shapes.plot([x for x, _ in sub], [j.b for _, j in sub], marker + ":", markersize=7,
                        label=f"shape $b$ of ${name}$")
        shapes.set_ylabel("Johnson $S_U$ shape")
        legend(shapes, fontsize="small")
    for ax in axes:
        _log_x(ax, xs)
        ax.set_xlabel(across)
    for k, which in enumerate(kinds):
        ax = fig.add_subplot(grid[1, k] if len(kinds) == 2 else grid[1, :])
        jsu_curves(ax, [(f"{across} = {p.x:g}", getattr(p, which)) for p in pts
                        if getattr(p, which) is not None],
                   "$a_k$" if which == "lower" else "$s_k$")
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
    legend(ax, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
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
        legend(ax, fontsize="small")
    return fig
