"""Decision maps from measured runs: grouping, tables, figures and the files ``ksptrace decide``
writes (generated C and Python, PETSc options per region, a follow-up campaign).

The computation is in ``decision``, ``quadtree`` and ``decision_study``; this module turns runs
(trace attributes and a time) into ``DecisionMap`` inputs and studies into tables, PNGs and files.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ksptrace import escape
from ksptrace.errors import AnalysisError, UsageError
from ksptrace.studies.decisions.codegen import c_source, python_source
from ksptrace.studies.decisions.maps import decision_map
from ksptrace.studies.decisions.next_points import campaign_toml
from ksptrace.studies.decisions.quadtree import QuadTree
from ksptrace.studies.decisions.rules import ompi_rules
from ksptrace.studies.decisions.study import DecisionStudy, TreeRow, study
from ksptrace.studies.drawing import _figure, to_png
from ksptrace.studies.table import Table
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS

DEFAULT_AXES = ("nprocs", "n")
DEFAULT_METHOD = "ksp"
IGNORED_FOR_GROUPING = ("ranks_per_node", "restart")
"""Configuration keys that follow from the axes or the method: ranks per node changes with P
on one node, and the restart length belongs to the GMRES family only."""
OPTION_OF_METHOD = {"ksp": "-ksp_type", "pc": "-pc_type"}
"""The PETSc option that selects a method, for the options files."""


@dataclass(frozen=True)
class Run:
    """One measured run: its attributes (axes, method, configuration) and its time."""

    attrs: Mapping[str, Any]
    seconds: float
    path: str = ""


@dataclass(frozen=True)
class Picture:
    key: str
    title: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class Studies:
    """The decision maps of a set of runs, and why some runs formed none."""

    axes: tuple[str, str]
    method: str
    studies: tuple[DecisionStudy, ...]
    notes: tuple[str, ...]
    settings: tuple[dict[str, Any], ...] = ()
    """Per study, the campaign keys its runs share (for the follow-up campaign file)."""


def run_of(attrs: Mapping[str, Any], nprocs: int, seconds: float, path: str = "") -> Run:
    """A run from trace attributes; ``nprocs`` is the trace's rank count."""
    merged = dict(attrs)
    merged.setdefault("nprocs", nprocs)
    for key, value in CONFIG_DEFAULTS.items():
        merged.setdefault(key, value)
    return Run(merged, float(seconds), path)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | np.integer | np.floating) and math.isfinite(float(value)):
        return float(value)
    return None


def build_studies(runs: Sequence[Run], axes: tuple[str, str] = DEFAULT_AXES,
                  method: str = DEFAULT_METHOD, max_depth: int | None = None,
                  threshold: float = 1.0, strict: bool = False) -> Studies:
    """One decision map per group of runs that agree on every configuration key but the axes
    and the method. Groups that cannot form a map are described in ``notes``; with ``strict``
    (the ``decide`` command) a request that forms no map at all is an error."""
    if len(set(axes)) != 2 or method in axes:
        raise UsageError(f"the two axes and the method must be three different keys, got axes "
                         f"{','.join(axes)} and method {method}")
    known = set().union(*(r.attrs for r in runs)) if runs else set()
    for key in (*axes, method):
        if runs and key not in known:
            near = sorted(k for k in known if k.lower() == key.lower() or key in k)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"no run has the key {key!r}{hint}; keys present: "
                             f"{', '.join(sorted(known))}")
    skip = set(axes) | {method} | set(IGNORED_FOR_GROUPING)
    group_keys = [k for k in CONFIG_KEYS if k not in skip]
    groups: dict[tuple[Any, ...], list[Run]] = {}
    notes: list[str] = []
    for r in runs:
        values = [_number(r.attrs.get(a)) for a in axes]
        if None in values:
            notes.append(f"{r.path or 'a run'}: no numeric {axes[values.index(None)]}; left out")
            continue
        groups.setdefault(tuple(str(r.attrs.get(k)) for k in group_keys), []).append(r)
    out: list[DecisionStudy] = []
    settings: list[dict[str, Any]] = []
    varying = _title_keys(group_keys, list(groups))
    for group, members in sorted(groups.items()):
        title = ", ".join(f"{group_keys[i]}={group[i]}" for i in varying) or "all runs"
        try:
            dm = decision_map(
                np.array([_number(r.attrs[axes[0]]) for r in members], dtype=float),
                np.array([_number(r.attrs[axes[1]]) for r in members], dtype=float),
                np.array([str(r.attrs.get(method)) for r in members]),
                np.array([r.seconds for r in members], dtype=float), axis_names=axes)
        except AnalysisError as exc:
            notes.append(f"{title}: no decision map: {exc}")
            continue
        out.append(study(dm, title, max_depth=max_depth, threshold=threshold))
        settings.append(_shared_settings(members))
    if strict and not out:
        raise AnalysisError("no decision map could be built: " + ("; ".join(notes) or
                            "no runs") + f" (axes {axes[0]} x {axes[1]}, method {method})")
    return Studies(axes, method, tuple(out), tuple(notes), tuple(settings))


SHARED_KEYS = ("problem", "pc", "iterations", "noise")


def _shared_settings(members: Sequence[Run]) -> dict[str, Any]:
    """The campaign keys of a group: problem, pc, iterations, noise, the problem's own."""
    first = members[0].attrs
    out: dict[str, Any] = {}
    for key in SHARED_KEYS:
        value = first.get(key)
        if value is None or (key == "noise" and value == "none"):
            continue
        out[key] = value.item() if isinstance(value, np.generic) else value
    raw = first.get("problem_config")
    if isinstance(raw, str) and raw.strip().startswith("{"):
        try:
            extra = json.loads(raw)
        except ValueError:
            extra = {}
        out.update({k: v for k, v in extra.items() if isinstance(v, str | int | float | bool)})
    return out


def _title_keys(keys: Sequence[str], groups: Sequence[tuple[str, ...]]) -> list[int]:
    """Which keys name a group: the problem whenever groups differ at all, and any other key
    only where it tells apart groups of one problem (so a problem's own settings, which differ
    between problems anyway, do not clutter every title)."""
    if len(groups) < 2:
        return []
    p = keys.index("problem") if "problem" in keys else None
    out = []
    for i in range(len(keys)):
        if len({g[i] for g in groups}) < 2:
            continue
        if i == p or p is None:
            out.append(i)
            continue
        by_problem: dict[str, set[str]] = {}
        for g in groups:
            by_problem.setdefault(g[p], set()).add(g[i])
        if any(len(v) > 1 for v in by_problem.values()):
            out.append(i)
    return out


def methods_table(s: DecisionStudy, name: str) -> Table:
    """What always using one method costs: the share of cells it wins and its penalty."""
    dm = s.dm
    rel = dm.relative_times() - 1.0
    measured = ~dm.filled
    rows = []
    for m, label in enumerate(dm.methods):
        r = rel[m][measured & np.isfinite(rel[m])]
        rows.append({"method": label,
                     "cells won": int((dm.best[measured] == m).sum()),
                     "cells measured": int(np.isfinite(dm.times[m][measured]).sum()),
                     "penalty mean %": _pct(float(r.mean())) if r.size else float("nan"),
                     "penalty max %": _pct(float(r.max())) if r.size else float("nan")})
    frame = pd.DataFrame(rows).sort_values("penalty mean %", kind="stable")
    return Table(name, f"{s.title}: always using one method", frame,
                 notes=("Penalty: the method's median time over the cell's best, minus 1, over "
                        "the cells where it was measured.",))


# -- tables --------------------------------------------------------------------------------------

def _pct(x: float) -> float:
    return round(100.0 * x, 2) if math.isfinite(x) else float("nan")


def query_times(tree: QuadTree, points: int = 20_000, seed: int = 0) -> tuple[float, float]:
    """Measured time per decision on this machine (ns): scalar ``query`` and ``query_many``,
    on random points over the measured range (log-uniform on an axis of positive values)."""
    rng = np.random.default_rng(seed)

    def draw(ax: np.ndarray) -> np.ndarray:
        if ax[0] > 0:
            return np.exp(rng.uniform(np.log(ax[0]), np.log(ax[-1]), points))
        return rng.uniform(ax[0], ax[-1], points)

    a, b = draw(tree.axis1), draw(tree.axis2)
    sa, sb = a[:2000].tolist(), b[:2000].tolist()
    best_scalar = best_vector = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for x, y in zip(sa, sb, strict=True):
            tree.query(x, y)
        t1 = time.perf_counter()
        tree.query_many(a, b)
        t2 = time.perf_counter()
        best_scalar = min(best_scalar, (t1 - t0) / len(sa) * 1e9)
        best_vector = min(best_vector, (t2 - t1) / points * 1e9)
    return best_scalar, best_vector


def sweep_table(s: DecisionStudy, limit: str, name: str, timed: bool = False) -> Table:
    """The paper's Table 3 (and, with ``timed``, Table 4's decision times measured here)."""
    rows = s.by_depth if limit == "depth" else s.by_threshold
    times = [query_times(r.tree) for r in rows] if timed else []
    frame = pd.DataFrame([{
        ("max depth" if limit == "depth" else "accuracy threshold"):
            int(r.value) if limit == "depth" else r.value,
        "depth max": r.tree.stats.max_depth,
        "depth min": r.tree.stats.min_leaf_depth,
        "depth mean": round(r.tree.stats.mean_depth, 4),
        "penalty min %": _pct(r.penalty_min),
        "penalty max %": _pct(r.penalty.max),
        "penalty mean %": _pct(r.penalty.mean),
        "penalty median %": _pct(r.penalty.median),
        "leaves": r.tree.stats.leaves,
        "nodes": r.tree.stats.nodes,
        "bytes": r.tree.stats.bytes,
        "C lines": r.c_lines,
    } for r in rows])
    if times:
        frame["query ns (scalar)"] = [round(t[0], 1) for t in times]
        frame["query ns (vectorised)"] = [round(t[1], 1) for t in times]
        frame["ns per level (scalar)"] = [round(t[0] / (r.tree.stats.mean_depth + 1), 1)
                                          for t, r in zip(times, rows, strict=True)]
    what = "maximum depth" if limit == "depth" else "accuracy threshold (no depth limit)"
    notes: tuple[str, ...] = (
        f"Trees limited by {what}, as the paper's Tables 3 and 4. Penalty: time of the chosen "
        "method over the cell's best, minus 1, over the measured cells.",)
    if times:
        notes += ("Query times: measured on this machine when the table was written, best of "
                  "3 over random points in the measured range; time per level as the paper's "
                  "Table 4, decision time / (mean depth + 1).",)
    return Table(name, f"{s.title}: quadtrees by {what}", frame, notes=notes)


def cells_table(s: DecisionStudy, name: str) -> Table:
    """Per measured cell: the best method, its time, the chosen tree's method and the penalty."""
    dm, tree = s.dm, s.chosen.tree
    chosen = tree.decisions()
    best_t = dm.best_time
    rows = []
    for i, a in enumerate(dm.axis1):
        for j, b in enumerate(dm.axis2):
            row: dict[str, Any] = {dm.axis_names[0]: _plain(a), dm.axis_names[1]: _plain(b),
                                   "best": dm.methods[int(dm.best[i, j])],
                                   "measured": not bool(dm.filled[i, j]),
                                   "best seconds": best_t[i, j],
                                   "tree": tree.methods[int(chosen[i, j])],
                                   "penalty %": _pct(float(s.chosen.penalty.per_cell[i, j]))}
            for m, label in enumerate(dm.methods):
                row[f"{label} seconds"] = dm.times[m, i, j]
            rows.append(row)
    return Table(name, f"{s.title}: every cell, best method and the tree's choice",
                 pd.DataFrame(rows),
                 notes=("Times are medians over repetitions (KSPSolve, slowest rank). Cells "
                        "without any measurement take the nearest measured cell's method "
                        "(measured = False).",))


def regions_table(s: DecisionStudy, name: str) -> Table:
    frame = pd.DataFrame([{
        "region": k + 1, "method": r.method,
        s.dm.axis_names[0]: _range(r.axis1_values, r.axis1_upper),
        s.dm.axis_names[1]: _range(r.axis2_values, r.axis2_upper),
        "depth": r.depth} for k, r in enumerate(s.regions)])
    return Table(name, f"{s.title}: regions of the chosen tree ({limit_name(s.chosen)})", frame)


def _plain(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


def _fmt(v: float) -> str:
    return f"{_plain(v):g}" if not float(v).is_integer() else str(int(v))


def _range(values: Sequence[float], upper: float | None) -> str:
    lo = _fmt(values[0])
    return f"[{lo}, {_fmt(upper)})" if upper is not None else f"≥ {lo}"


def limit_name(r: TreeRow) -> str:
    if r.limit == "depth":
        return f"depth ≤ {int(r.value)}"
    return f"accuracy threshold {r.value:g}"


def cart_table(s: DecisionStudy, name: str) -> Table:
    """The quadtree of each depth limit beside CART with the same number of leaves."""
    notes = ("CART: scikit-learn's DecisionTreeClassifier with at most as many leaves as the "
             "quadtree, trained on the measured cells (log2 of positive axes), scored with the "
             "same penalty.",)
    if not s.cart:
        return Table(name, f"{s.title}: quadtree against CART", pd.DataFrame(),
                     notes=("scikit-learn is not installed: apt-get install python3-sklearn, "
                            "or pip install scikit-learn",))
    frame = pd.DataFrame([{
        "quadtree max depth": int(r.value), "leaves": r.tree.stats.leaves,
        "quadtree penalty mean %": _pct(r.penalty.mean),
        "quadtree penalty max %": _pct(r.penalty.max),
        "CART leaves": c.leaves, "CART depth": c.depth,
        "CART penalty mean %": _pct(c.penalty.mean), "CART penalty max %": _pct(c.penalty.max),
        "CART agreement %": _pct(c.agreement)} for r, c in zip(s.by_depth, s.cart, strict=True)])
    return Table(name, f"{s.title}: quadtree against CART with the same leaves", frame,
                 notes=notes)


def next_table(s: DecisionStudy, name: str) -> Table:
    a1, a2 = s.dm.axis_names
    frame = pd.DataFrame([{a1: _plain(p.a), a2: _plain(p.b), "why": p.reason,
                           "detail": p.detail} for p in s.next_points.points])
    notes: tuple[str, ...] = (
        "Unmeasured cells first, then points between neighbouring cells with different "
        "fastest methods, then cells whose two fastest methods are within 5 % (measure "
        "again). `ksptrace decide` writes them as a campaign file, next.toml.",)
    if s.next_points.dropped:
        notes += (f"{s.next_points.dropped} more points left out.",)
    return Table(name, f"{s.title}: where to measure next", frame, notes=notes)


def study_tables(s: DecisionStudy, index: int, timed: bool = False) -> list[Table]:
    """The tables of one map; ``timed`` adds measured query times (``decide`` only, so that
    the analysis report stays reproducible)."""
    stem = f"decision{index + 1}"
    return [methods_table(s, f"{stem}_methods"),
            cart_table(s, f"{stem}_cart"),
            next_table(s, f"{stem}_next"),
            sweep_table(s, "depth", f"{stem}_by_depth", timed),
            sweep_table(s, "threshold", f"{stem}_by_threshold", timed),
            regions_table(s, f"{stem}_regions"),
            cells_table(s, f"{stem}_cells")]


def summary_of(s: DecisionStudy) -> dict[str, Any]:
    """The headline of a study, for summary.json and the sentences."""
    dm = s.dm
    return {
        "title": s.title, "axes": list(dm.axis_names), "methods": list(dm.methods),
        "axis1": [_plain(v) for v in dm.axis1], "axis2": [_plain(v) for v in dm.axis2],
        "measured_cells": int((~dm.filled).sum()), "filled_cells": int(dm.filled.sum()),
        "square_side": s.square.size, "replicated_share": round(s.square.replicated_share, 4),
        "best": [[dm.methods[int(m)] for m in row] for row in dm.best],
        "exact_tree": {"leaves": s.exact.tree.stats.leaves, "nodes": s.exact.tree.stats.nodes,
                       "max_depth": s.exact.tree.stats.max_depth},
        "single_best_method": s.single.tree.methods[int(s.single.tree.decisions()[0, 0])],
        "single_best_penalty_mean": s.single.penalty.mean,
        "single_best_penalty_max": s.single.penalty.max,
    }


def sentences(s: DecisionStudy) -> list[str]:
    """What the map says, in words generated from the numbers."""
    dm = s.dm
    wins = np.bincount(dm.best[~dm.filled], minlength=len(dm.methods))
    measured = int((~dm.filled).sum())
    order = np.argsort(-wins)
    parts = [f"{dm.methods[m]} in {wins[m]}" for m in order if wins[m] > 0]
    zero = s.single
    one = zero.tree.methods[int(zero.tree.decisions()[0, 0])]
    text = ["The fastest method (median KSPSolve) is " + ", ".join(parts) +
            f" of {measured} measured cells."]
    leaves = s.exact.tree.stats.leaves
    exact = (f"the exact tree needs {leaves} leaves and depth {s.exact.tree.stats.max_depth}"
             if leaves > 1 else "the exact tree is this single leaf")
    text.append(f"Always using {one}, the best single method on average, costs "
                f"{_pct(zero.penalty.mean):g} % on average and {_pct(zero.penalty.max):g} % at "
                f"worst; {exact}.")
    rest = methods_table(s, "m").frame
    others = [f"{r['method']} {r['penalty mean %']:+g} %" for r in rest.to_dict("records")
              if r["method"] != one and np.isfinite(r["penalty mean %"])]
    if others:
        text.append("Always using another method costs on average: " + ", ".join(others) + ".")
    if s.cart and len(s.by_depth) > 1:
        r, c = s.by_depth[1], s.cart[1]
        text.append(f"With {r.tree.stats.leaves} leaves, the depth-1 quadtree gives away "
                    f"{_pct(r.penalty.mean):g} % on average, CART with as many leaves "
                    f"{_pct(c.penalty.mean):g} %.")
    better = [r for r in s.by_depth[1:] if r.penalty.mean <= 0.05]
    if better and better[0].tree.stats.max_depth < s.exact.tree.stats.max_depth:
        r = better[0]
        text.append(f"A tree of depth {int(r.value)} ({r.tree.stats.leaves} leaves) is within "
                    f"{_pct(r.penalty.mean):g} % of the exact map on average "
                    f"({_pct(r.penalty.max):g} % at worst).")
    return text


# -- figures -------------------------------------------------------------------------------------

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def _cells_axes(ax: Any, s: DecisionStudy) -> None:
    dm = s.dm
    ax.set_xticks(range(dm.axis2.size), [_fmt(v) for v in dm.axis2], rotation=45,
                  fontsize=7)
    ax.set_yticks(range(dm.axis1.size), [_fmt(v) for v in dm.axis1], fontsize=7)
    ax.set_xlabel(dm.axis_names[1])
    ax.set_ylabel(dm.axis_names[0])


def maps_figure(s: DecisionStudy) -> Picture:
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
                     f"{_pct(r.penalty.mean):g} %", fontsize=8)
        _cells_axes(ax, s)
    handles = [Patch(color=PALETTE[i % len(PALETTE)], label=m) for i, m in enumerate(dm.methods)]
    if dm.filled.any():
        handles.append(Line2D([], [], marker="x", color="k", ls="", label="not measured"))
    axs[len(rows)].legend(handles=handles, loc="center", fontsize=9, title="method")
    return Picture("decision_maps", f"{s.title}: decision maps",
                   "The fastest method per measured cell (exact map) and the map each "
                   "depth-limited quadtree encodes, with its leaves and mean penalty. Rows and "
                   "columns are the measured values (not to scale).", to_png(fig))


def penalty_figure(s: DecisionStudy) -> Picture:
    """The penalty of each depth-limited tree per cell (the paper's Figure 3)."""
    rows = list(s.by_depth)[:8]
    cols = min(4, len(rows))
    nrow = math.ceil(len(rows) / cols)
    fig = _figure(height=2.8 * nrow + 0.4)
    axs = fig.subplots(nrow, cols, squeeze=False)
    top = max(1.0, max(_pct(float(np.nanmax(r.penalty.per_cell)))
                       if np.isfinite(r.penalty.per_cell).any() else 0.0 for r in rows))
    image = None
    for k, ax in enumerate(axs.ravel()):
        if k >= len(rows):
            ax.set_visible(False)
            continue
        r = rows[k]
        image = ax.imshow(100.0 * r.penalty.per_cell, origin="lower", aspect="auto",
                          cmap="magma_r", vmin=0.0, vmax=top, interpolation="nearest")
        ax.set_title(f"depth ≤ {int(r.value)}: mean {_pct(r.penalty.mean):g} %, "
                     f"max {_pct(r.penalty.max):g} %", fontsize=8)
        _cells_axes(ax, s)
    if image is not None:
        fig.colorbar(image, ax=axs, label="penalty (%)", shrink=0.8)
    return Picture("decision_penalty", f"{s.title}: performance penalty per cell",
                   "Time of the method each depth-limited tree chooses over the cell's best, "
                   "minus 1, in per cent (0: the tree chooses the fastest method). Blank: not "
                   "measured.", to_png(fig))


def depth_figure(s: DecisionStudy) -> Picture:
    """Mean penalty against mean depth, depth-limited and threshold-limited (Figure 5)."""
    fig = _figure(height=3.6)
    ax = fig.subplots()
    for rows, label, marker in ((s.by_depth, "maximum depth", "o"),
                                (s.by_threshold, "accuracy threshold", "s")):
        x = [r.tree.stats.mean_depth for r in rows]
        y = [_pct(r.penalty.mean) for r in rows]
        ax.plot(x, y, marker=marker, label=label)
        for r, xi, yi in zip(rows, x, y, strict=True):
            tag = f"{int(r.value)}" if r.limit == "depth" else f"{r.value:g}"
            ax.annotate(tag, (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("mean leaf depth")
    ax.set_ylabel("mean penalty (%)")
    ax.legend()
    ax.grid(alpha=0.3)
    return Picture("decision_depth", f"{s.title}: penalty against tree size",
                   "Mean penalty over measured cells against the trees' mean leaf depth, for "
                   "trees limited by maximum depth (labels: the limit) and by accuracy threshold "
                   "(labels: the threshold).", to_png(fig))


def study_figures(s: DecisionStudy) -> list[Picture]:
    return [maps_figure(s), penalty_figure(s), depth_figure(s)]


# -- files ---------------------------------------------------------------------------------------

def slug(title: str) -> str:
    text = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
    return text[:80] or "map"


def options_files(s: DecisionStudy, method: str) -> dict[str, str]:
    """File name -> PETSc options file, one per region of the chosen tree whose method is a
    valid PETSc type name (see :func:`options_refused` for the others)."""
    option = OPTION_OF_METHOD.get(method)
    if option is None:
        return {}
    a1, a2 = s.dm.axis_names
    out: dict[str, str] = {}
    for k, r in enumerate(s.regions):
        if not escape.petsc_name(r.method):
            continue
        comment = escape.comment(
            f"ksptrace decide: region {k + 1} of {len(s.regions)} ({s.title})", limit=400)
        where = escape.comment(
            f"{a1} {_range(r.axis1_values, r.axis1_upper)}, "
            f"{a2} {_range(r.axis2_values, r.axis2_upper)}; values below the measured range "
            "count as its lowest", limit=400)
        measured = escape.comment(
            f"measured {a1}: {', '.join(_fmt(v) for v in r.axis1_values)}; "
            f"{a2}: {', '.join(_fmt(v) for v in r.axis2_values)}", limit=2000)
        out[f"region-{k + 1:03d}-{escape.bounded_stem(r.method, 60)}.opts"] = (
            f"# {comment}\n# {where}\n# {measured}\n{option} {r.method}\n")
    return out


def options_refused(s: DecisionStudy, method: str) -> list[str]:
    """Why some regions got no options file: their method is no PETSc type name."""
    if method not in OPTION_OF_METHOD:
        return []
    bad = sorted({r.method for r in s.regions if not escape.petsc_name(r.method)})
    return [f"no PETSc options file for the method {escape.comment(m, 60)!r}: a PETSc type "
            "name is made of letters, digits and underscores only" for m in bad]


def write_files(folder: Path, studies: Studies, tables_of: Sequence[Sequence[Table]],
                pictures_of: Sequence[Sequence[Picture]],
                rules: tuple[str, Mapping[str, int]] | None = None) -> list[Path]:
    """Write everything ``decide`` produces for each study into ``folder`` (already staged)."""
    written: list[Path] = []
    index: list[dict[str, Any]] = []
    for k, s in enumerate(studies.studies):
        sub = folder / f"{k + 1:02d}-{slug(s.title)}"
        sub.mkdir()
        for t in tables_of[k]:
            p = sub / f"{t.name.split('_', 1)[1]}.csv"
            p.write_text(t.to_csv())
            written.append(p)
        for pic in pictures_of[k]:
            p = sub / f"{pic.key}.png"
            p.write_bytes(pic.png)
            written.append(p)
        (sub / "decide.c").write_text(c_source(s.chosen.tree))
        (sub / "decide.py").write_text(python_source(s.chosen.tree))
        if s.next_points.points:
            settings = studies.settings[k] if k < len(studies.settings) else {}
            (sub / "next.toml").write_text(campaign_toml(
                s.next_points, settings, s.dm.methods, studies.method,
                f"next-{slug(s.title)}"[:60]))
            written.append(sub / "next.toml")
        if rules is not None:
            collective, algorithms = rules
            p = sub / f"ompi-rules-{collective}.conf"
            p.write_text(ompi_rules(s.chosen.tree, collective, algorithms))
            written.append(p)
        opts = options_files(s, studies.method)
        if opts:
            (sub / "petsc-options").mkdir()
            for name, text in opts.items():
                (sub / "petsc-options" / name).write_text(text)
        written.extend([sub / "decide.c", sub / "decide.py"])
        entry = summary_of(s)
        entry["folder"] = sub.name
        entry["chosen_tree"] = limit_name(s.chosen)
        entry["regions"] = len(s.regions)
        entry["options_files"] = sorted(opts)
        refused = options_refused(s, studies.method)
        if refused:
            entry["options_files_refused"] = refused
        index.append(entry)
    (folder / "decision.json").write_text(json.dumps(
        {"axes": list(studies.axes), "method": studies.method, "maps": index,
         "notes": list(studies.notes)}, indent=2) + "\n")
    written.append(folder / "decision.json")
    return written


def runs_from(items: Iterable[Any]) -> tuple[list[Run], list[str]]:
    """Runs from traces (``Trace`` or the reader's error), keeping only attributes and time."""
    runs: list[Run] = []
    skipped: list[str] = []
    for item in items:
        if isinstance(item, Exception):
            skipped.append(str(item))
            continue
        runs.append(run_of(item.attrs, item.nprocs, item.solve_max, item.path or item.label))
    return runs, skipped
