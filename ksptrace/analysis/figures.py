"""The paper's figures, one function each. Every function returns a matplotlib Figure built
without pyplot (no global state, Agg canvas), so that reports can be drawn off-screen.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ksptrace.analysis.cycles import CycleLayout
from ksptrace.analysis.fitting import FitRanking
from ksptrace.analysis.models import UniformFits
from ksptrace.analysis.montecarlo import ParameterFits

MAX_IMAGE_ROWS = 1024
"""Colormaps of larger traces are shown as block means (rows and columns)."""


def _figure(width: float = 7.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def rank_histograms(times: np.ndarray, ranks: Sequence[int] = (0, 1), bins: int = 100) -> Figure:
    """Distribution of T_p^k over k for a few fixed ranks."""
    fig = _figure()
    ax = fig.add_subplot()
    x = np.asarray(times)
    for r in ranks:
        if 0 <= r < x.shape[0]:
            ax.hist(x[r], bins=bins, density=True, histtype="step", label=f"rank {r}")
    ax.set_xlabel("iteration time T_p^k (s)")
    ax.set_ylabel("density")
    ax.set_title("Per-rank distribution of iteration times")
    ax.legend()
    return fig


def iteration_vs_rank(
    times: np.ndarray, iteration: int, node_ids: np.ndarray, inset_nodes: int = 10
) -> Figure:
    """T_p^k against rank p for one iteration k, with node boundaries (first nodes enlarged)."""
    fig = _figure(8.0, 4.5)
    ax, inset = fig.subplots(1, 2, width_ratios=[2, 1])
    y = np.asarray(times)[:, iteration]
    ids = np.asarray(node_ids)
    ax.plot(np.arange(y.size), y, ".", markersize=2)
    ax.set_xlabel("rank p")
    ax.set_ylabel("T_p^k (s)")
    ax.set_title(f"Iteration k = {iteration}")
    boundaries = np.flatnonzero(np.diff(ids) != 0) + 0.5
    first = boundaries[:inset_nodes]
    upto = int(first[-1] + 0.5) if first.size else y.size
    inset.plot(np.arange(upto), y[:upto], ".", markersize=3)
    for b in first:
        inset.axvline(b, color="k", linewidth=0.6)
    inset.set_title(f"first {min(inset_nodes, first.size + 1)} nodes")
    inset.set_xlabel("rank p")
    return fig


def _block_mean(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    fr = max(1, int(np.ceil(x.shape[0] / rows)))
    fc = max(1, int(np.ceil(x.shape[1] / cols)))
    r, c = x.shape[0] // fr * fr, x.shape[1] // fc * fc
    return x[:r, :c].reshape(r // fr, fr, c // fc, fc).mean(axis=(1, 3))


def colormap(times: np.ndarray, iterations: np.ndarray | None = None) -> Figure:
    """Colormap of T_p^k over iterations (rows) and ranks (columns), e.g. equal-work iterations."""
    x = np.asarray(times)
    if iterations is not None:
        x = x[:, iterations]
    img = _block_mean(x.T, MAX_IMAGE_ROWS, MAX_IMAGE_ROWS)
    fig = _figure(7.0, 5.0)
    ax = fig.add_subplot()
    lo, hi = np.quantile(img, [0.01, 0.99])
    mesh = ax.imshow(
        img,
        aspect="auto",
        origin="lower",
        cmap="coolwarm",
        vmin=lo,
        vmax=hi,
        extent=(0, x.shape[0], 0, x.shape[1]),
    )
    ax.set_xlabel("rank p")
    ax.set_ylabel("iteration (selected)" if iterations is not None else "iteration k")
    fig.colorbar(mesh, ax=ax, label="T_p^k (s)")
    return fig


def bulk_fit(ranking: FitRanking, top: int = 4) -> Figure:
    """Histogram of all iteration times with the best fitted pdfs."""
    fig = _figure()
    ax = fig.add_subplot()
    h = ranking.histogram
    ax.stairs(h.density, h.edges, fill=True, alpha=0.4, label="data")
    grid = np.linspace(h.edges[0], h.edges[-1], 400)
    for f in ranking.fits[:top]:
        ax.plot(grid, f.frozen().pdf(grid), label=f"{f.name} (SSE {f.sse:.3g})")
    ax.set_xlabel("iteration time (s)")
    ax.set_ylabel("density")
    ax.set_title("Bulk distribution and fitted families")
    ax.legend(fontsize="small")
    return fig


def uniform_fits(times: np.ndarray, iterations: Sequence[int], bins: int = 40) -> Figure:
    """Histograms of a few iterations with their uniform fits [a_k, a_k + s_k]."""
    fig = _figure()
    ax = fig.add_subplot()
    x = np.asarray(times)
    for k in iterations:
        col = x[:, k]
        a, b = float(col.min()), float(col.max())
        (line,) = ax.plot([a, a, b, b], [0, 1 / max(b - a, 1e-300), 1 / max(b - a, 1e-300), 0])
        ax.hist(col, bins=bins, density=True, alpha=0.4, color=line.get_color(), label=f"k = {k}")
    ax.set_xlabel("T_p^k (s)")
    ax.set_ylabel("density")
    ax.set_title("Iterations with fitted uniform distributions")
    ax.legend()
    return fig


def uniform_parameters(fits: UniformFits, params: ParameterFits | None, bins: int = 60) -> Figure:
    """Histograms of a_k and s_k with their Johnson S_U fits."""
    fig = _figure(8.0, 3.5)
    for ax, data, name, jsu in zip(
        fig.subplots(1, 2),
        (fits.lower, fits.span),
        ("a_k (minimum)", "s_k (span)"),
        (None if params is None else params.lower, None if params is None else params.span),
        strict=True,
    ):
        ax.hist(data, bins=bins, density=True, alpha=0.5)
        if jsu is not None:
            grid = np.linspace(float(data.min()), float(data.max()), 300)
            ax.plot(grid, jsu.frozen().pdf(grid), label="Johnson S_U")
            ax.legend(fontsize="small")
        ax.set_xlabel(f"{name} (s)")
    fig.suptitle("Uniform parameters per iteration")
    return fig


def scaling_curves(entries: Sequence[tuple[str, ParameterFits]], across: str) -> Figure:
    """Johnson S_U pdfs of a_k and s_k for several configurations (across P or n)."""
    fig = _figure(8.0, 3.5)
    axes = fig.subplots(1, 2)
    for which, ax in zip(("lower", "span"), axes, strict=True):
        dists = [(label, getattr(p, which).frozen()) for label, p in entries]
        if not dists:
            continue
        lo = min(float(d.ppf(0.005)) for _, d in dists)
        hi = max(float(d.ppf(0.995)) for _, d in dists)
        grid = np.linspace(lo, hi, 400)
        for label, d in dists:
            ax.plot(grid, d.pdf(grid), label=label)
        ax.set_xlabel(("a_k" if which == "lower" else "s_k") + " (s)")
        ax.legend(fontsize="small")
    fig.suptitle(f"Johnson S_U fits across {across}")
    return fig


def cycle_histograms(
    times: np.ndarray, layout: CycleLayout, positions: Sequence[int], bins: int = 80
) -> Figure:
    """Histograms of iterations at chosen restart-cycle positions, next to the bulk one."""
    fig = _figure()
    ax = fig.add_subplot()
    x = np.asarray(times)
    keep = layout.keep(True)
    bulk = x[:, keep].ravel() if keep.size < x.shape[1] else x.ravel()
    lo, hi = np.quantile(bulk[:: max(1, bulk.size // 200_000)], [0.001, 0.999])
    ax.hist(
        bulk,
        bins=bins,
        range=(lo, hi),
        density=True,
        histtype="step",
        color="k",
        label="all iterations",
    )
    for pos in positions:
        sel = layout.at_position(pos)
        if sel.size:
            ax.hist(
                x[:, sel].ravel(),
                bins=bins,
                range=(lo, hi),
                density=True,
                histtype="step",
                label=f"k mod {layout.cycle_length} = {pos}",
            )
    ax.set_xlabel("iteration time (s)")
    ax.set_ylabel("density")
    ax.set_title("Iterations by position in the restart cycle")
    ax.legend(fontsize="small")
    return fig
