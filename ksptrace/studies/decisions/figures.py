"""The decision study's figures: the maps (measured and the tree's), the penalty against tree
size, and the depth of the tree, as PNG bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ksptrace.studies.decisions.study import DecisionStudy
from ksptrace.studies.decisions.tables import fmt_number, percent
from ksptrace.studies.drawing import _figure, to_png
from ksptrace.studies.result import Figure

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def _cells_axes(ax: Any, s: DecisionStudy) -> None:
    dm = s.dm
    ax.set_xticks(range(dm.axis2.size), [fmt_number(v) for v in dm.axis2], rotation=45,
                  fontsize=7)
    ax.set_yticks(range(dm.axis1.size), [fmt_number(v) for v in dm.axis1], fontsize=7)
    ax.set_xlabel(dm.axis_names[1])
    ax.set_ylabel(dm.axis_names[0])


def maps_figure(s: DecisionStudy) -> Figure:
    """The exact map and the depth-limited trees' maps (the paper's Figure 2)."""
    dm = s.dm
    rows = [s.exact, *[r for r in s.by_depth if r.value < s.exact.tree.stats.max_depth]]
    rows = rows[:7]
    slots = len(rows) + 1  # the last panel holds the legend
    cols = min(4, slots)
    nrow = math.ceil(slots / cols)
    fig = _figure(height=2.8 * nrow)
    n = len(dm.methods)
    cmap = ListedColormap([PALETTE[i % len(PALETTE)] for i in range(n)])
    norm = BoundaryNorm(np.arange(n + 1) - 0.5, n)
    axs = fig.subplots(nrow, cols, squeeze=False).ravel()
    for k, ax in enumerate(axs):
        if k >= len(rows):
            ax.axis("off")
            continue
        r = rows[k]
        grid = dm.best if k == 0 else r.tree.decisions()
        ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, norm=norm,
                  interpolation="nearest")
        if k == 0 and dm.filled.any():
            fi, fj = np.nonzero(dm.filled)
            ax.plot(fj, fi, "x", color="k", ms=4)
        ax.set_title("exact map" if k == 0 else
                     f"depth ≤ {int(r.value)}: {r.tree.stats.leaves} leaves, "
                     f"{r.penalty.text()}", fontsize=8)
        _cells_axes(ax, s)
    handles = [Patch(color=PALETTE[i % len(PALETTE)], label=m) for i, m in enumerate(dm.methods)]
    if dm.filled.any():
        handles.append(Line2D([], [], marker="x", color="k", ls="", label="not measured"))
    axs[len(rows)].legend(handles=handles, loc="center", fontsize=9, title="method")
    return Figure("decision_maps", f"{s.title}: decision maps",
                   "The fastest method per measured cell (exact map) and the map each "
                   "depth-limited quadtree encodes, with its leaves and mean penalty. Rows and "
                   "columns are the measured values (not to scale).", to_png(fig))


def penalty_figure(s: DecisionStudy) -> Figure:
    """The penalty of each depth-limited tree per cell (the paper's Figure 3)."""
    rows = list(s.by_depth)[:8]
    cols = min(4, len(rows))
    nrow = math.ceil(len(rows) / cols)
    fig = _figure(height=2.8 * nrow + 0.4)
    axs = fig.subplots(nrow, cols, squeeze=False)
    top = max(1.0, max(percent(float(np.nanmax(r.penalty.per_cell)))
                       if np.isfinite(r.penalty.per_cell).any() else 0.0 for r in rows))
    image = None
    for k, ax in enumerate(axs.ravel()):
        if k >= len(rows):
            ax.set_visible(False)
            continue
        r = rows[k]
        image = ax.imshow(100.0 * r.penalty.per_cell, origin="lower", aspect="auto",
                          cmap="magma_r", vmin=0.0, vmax=top, interpolation="nearest")
        ax.set_title(f"depth ≤ {int(r.value)}: mean {r.penalty.text()}, "
                     f"max {r.penalty.text('max')}", fontsize=8)
        _cells_axes(ax, s)
    if image is not None:
        fig.colorbar(image, ax=axs, label="penalty (%)", shrink=0.8)
    return Figure("decision_penalty", f"{s.title}: performance penalty per cell",
                   "Time of the method each depth-limited tree chooses over the cell's best, "
                   "minus 1, in per cent (0: the tree chooses the fastest method). Blank: not "
                   "measured.", to_png(fig))


def merged_labels(points: Sequence[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """One label per distinct point: the tags of the limits that give the same tree joined
    ("0.4–0.6" for three or more, "0.4, 0.5" for two), so none is drawn over another."""
    at: dict[tuple[float, float], list[str]] = {}
    for x, y, tag in points:
        at.setdefault((round(x, 6), round(y, 6)), []).append(tag)
    return [(x, y, tags[0] if len(tags) == 1 else ", ".join(tags) if len(tags) == 2
             else f"{tags[0]}–{tags[-1]}") for (x, y), tags in at.items()]


def depth_axes(s: DecisionStudy) -> Any:
    """The matplotlib figure of :func:`depth_figure`: depth limits labelled above their
    points, thresholds below, one label per distinct point of each."""
    fig = _figure(height=3.6)
    ax = fig.subplots()
    for rows, label, marker, offset in ((s.by_depth, "maximum depth", "o", (4, 4)),
                                        (s.by_threshold, "accuracy threshold", "s", (4, -11))):
        x = [r.tree.stats.mean_depth for r in rows]
        y = [percent(r.penalty.mean) for r in rows]
        ax.plot(x, y, marker=marker, label=label)
        tags = [f"{int(r.value)}" if r.limit == "depth" else f"{r.value:g}" for r in rows]
        for xi, yi, tag in merged_labels(list(zip(x, y, tags, strict=True))):
            ax.annotate(tag, (xi, yi), textcoords="offset points", xytext=offset, fontsize=7)
    ax.margins(x=0.08, y=0.12)  # room for the labels beside the end points
    ax.set_xlabel("mean leaf depth")
    ax.set_ylabel("mean penalty (%)")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def depth_figure(s: DecisionStudy) -> Figure:
    """Mean penalty against mean depth, depth-limited and threshold-limited (Figure 5)."""
    return Figure("decision_depth", f"{s.title}: penalty against tree size",
                  "Mean penalty over measured cells against the trees' mean leaf depth, for "
                  "trees limited by maximum depth (labels: the limit, above the point) and by "
                  "accuracy threshold (labels: the threshold, below; limits that give the same "
                  "tree share one label).", to_png(depth_axes(s)))


def _tree_sizes(s: DecisionStudy) -> set[tuple[float, float]]:
    rows = (*s.by_depth, *s.by_threshold)
    return {(round(r.tree.stats.mean_depth, 6), round(percent(r.penalty.mean), 6)) for r in rows}


def left_out(s: DecisionStudy) -> list[str]:
    """Why a figure of ``s`` is not drawn (no plot of a single point under many labels)."""
    sizes = _tree_sizes(s)
    if len(sizes) < 2:
        depth, pen = next(iter(sizes), (0.0, 0.0))
        return [f"No plot of the penalty against tree size: every depth and threshold limit "
                f"gives the same tree (mean leaf depth {depth:g}, mean penalty {pen:g} %)."]
    return []


def study_figures(s: DecisionStudy) -> list[Figure]:
    return [maps_figure(s), penalty_figure(s), *([] if left_out(s) else [depth_figure(s)])]
