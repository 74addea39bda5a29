"""The decision study's tables (methods, query times, the sweep of tree sizes, cells, regions,
CART, where to measure next) and its sentences.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ksptrace.studies.decisions.quadtree import QuadTree
from ksptrace.studies.decisions.study import DecisionStudy, TreeRow
from ksptrace.studies.table import Table

if TYPE_CHECKING:
    import pandas as pd


def _frame(*args: Any, **kwargs: Any) -> pd.DataFrame:
    """``pd.DataFrame(...)``, pandas imported only when a decision map is made (an analysis
    without one does not load it)."""
    import pandas as pd

    return pd.DataFrame(*args, **kwargs)


def methods_table(s: DecisionStudy, name: str) -> Table:
    """What always using one method costs: the share of cells it wins and its penalty."""
    dm = s.dm
    rel = dm.relative_times() - 1.0
    measured = ~dm.filled
    rows = []
    cells = int(measured.sum())
    for m, label in enumerate(dm.methods):
        r = rel[m][measured & np.isfinite(rel[m])]
        everywhere = r.size == cells  # a cell it never ran in is "not run there", not 0 %
        rows.append({"method": label,
                     "cells won": int((dm.best[measured] == m).sum()),
                     "cells measured": int(np.isfinite(dm.times[m][measured]).sum()),
                     "not run in": cells - int(r.size),
                     "penalty mean %": percent(float(r.mean())) if everywhere else float("nan"),
                     "penalty max %": percent(float(r.max())) if everywhere else float("nan")})
    frame = _frame(rows).sort_values("penalty mean %", kind="stable")
    return Table(name, f"{s.title}: always using one method", frame,
                 notes=("Penalty: the method's median time over the cell's best, minus 1, over "
                        "the measured cells; a method not run in some of them has none (\"not "
                        "run in\" counts those cells): a cell where it never ran is not 0 %.",))


def percent(x: float) -> float:
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
    frame = _frame([{
        ("max depth" if limit == "depth" else "accuracy threshold"):
            int(r.value) if limit == "depth" else r.value,
        "depth max": r.tree.stats.max_depth,
        "depth min": r.tree.stats.min_leaf_depth,
        "depth mean": round(r.tree.stats.mean_depth, 4),
        "penalty min %": percent(r.penalty_min),
        "penalty max %": percent(r.penalty.max),
        "penalty mean %": percent(r.penalty.mean),
        "penalty median %": percent(r.penalty.median),
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
                                   "penalty %": percent(float(s.chosen.penalty.per_cell[i, j]))}
            for m, label in enumerate(dm.methods):
                row[f"{label} seconds"] = dm.times[m, i, j]
            rows.append(row)
    return Table(name, f"{s.title}: every cell, best method and the tree's choice",
                 _frame(rows),
                 notes=("Times are medians over repetitions (KSPSolve, slowest rank). Cells "
                        "without any measurement take the nearest measured cell's method "
                        "(measured = False).",))


def regions_table(s: DecisionStudy, name: str) -> Table:
    frame = _frame([{
        "region": k + 1, "method": r.method,
        s.dm.axis_names[0]: range_text(r.axis1_values, r.axis1_upper),
        s.dm.axis_names[1]: range_text(r.axis2_values, r.axis2_upper),
        "depth": r.depth} for k, r in enumerate(s.regions)])
    return Table(name, f"{s.title}: regions of the chosen tree ({limit_name(s.chosen)})", frame)


def _plain(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


def fmt_number(v: float) -> str:
    return f"{_plain(v):g}" if not float(v).is_integer() else str(int(v))


def range_text(values: Sequence[float], upper: float | None) -> str:
    lo = fmt_number(values[0])
    return f"[{lo}, {fmt_number(upper)})" if upper is not None else f"≥ {lo}"


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
        return Table(name, f"{s.title}: quadtree against CART", _frame(),
                     notes=("scikit-learn is not installed: apt-get install python3-sklearn, "
                            "or pip install scikit-learn",))
    frame = _frame([{
        "quadtree max depth": int(r.value), "leaves": r.tree.stats.leaves,
        "quadtree penalty mean %": percent(r.penalty.mean),
        "quadtree penalty max %": percent(r.penalty.max),
        "CART leaves": c.leaves, "CART depth": c.depth,
        "CART penalty mean %": percent(c.penalty.mean),
        "CART penalty max %": percent(c.penalty.max),
        "CART agreement %": percent(c.agreement)} for r, c in zip(s.by_depth, s.cart, strict=True)])
    return Table(name, f"{s.title}: quadtree against CART with the same leaves", frame,
                 notes=notes)


def next_table(s: DecisionStudy, name: str) -> Table:
    a1, a2 = s.dm.axis_names
    frame = _frame([{a1: _plain(p.a), a2: _plain(p.b), "why": p.reason,
                           "detail": p.detail} for p in s.next_points.points])
    notes: tuple[str, ...] = (
        "Unmeasured cells first, then points between neighbouring cells with different "
        "fastest methods, then cells whose two fastest methods are within 5 % (measure "
        "again). `ksptrace decide` writes them as a campaign file, next.toml.",)
    if not s.next_points.points and not s.next_points.dropped:
        notes = ("Nothing to measure next: every cell is measured, no two neighbouring cells "
                 "have different fastest methods, and no cell's two fastest methods are within "
                 "5 % of each other; so `ksptrace decide` writes no next.toml.",)
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
        "encoding": s.square.encoding,
        "exact_leaves_by_encoding": dict(s.encoding.leaves) if s.encoding else {},
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
    if zero.penalty.unknown:
        text.append(f"No single method ran in every measured cell (the best on average, {one}, "
                    f"{zero.penalty.text()}), so what always using one costs cannot be told; "
                    f"{exact}.")
    else:
        text.append(f"Always using {one}, the best single method on average among those run "
                    f"in every cell, costs {zero.penalty.text()} on average and "
                    f"{zero.penalty.text('max')} at worst; {exact}.")
    rest = methods_table(s, "m").frame
    # a method not run in some measured cell has no penalty over the map: "not run there",
    # never the average over the cells it ran in (which reads 0 % beside a costlier "best")
    others = [f"{r['method']} {r['penalty mean %']:+g} %"
              if np.isfinite(r["penalty mean %"]) else
              f"{r['method']} cannot tell (not run in {r['not run in']} of {measured} cells)"
              for r in rest.to_dict("records") if r["method"] != one]
    if others:
        text.append("Always using another method costs on average: " + ", ".join(others) + ".")
    if s.cart and len(s.by_depth) > 1:
        r, c = s.by_depth[1], s.cart[1]
        text.append(f"With {r.tree.stats.leaves} leaves, the depth-1 quadtree gives away "
                    f"{r.penalty.text()} on average, CART with as many leaves "
                    f"{c.penalty.text()}.")
    better = [r for r in s.by_depth[1:] if r.penalty.mean <= 0.05]
    if better and better[0].tree.stats.max_depth < s.exact.tree.stats.max_depth:
        r = better[0]
        text.append(f"A tree of depth {int(r.value)} ({r.tree.stats.leaves} leaves) is within "
                    f"{r.penalty.text()} of the exact map on average "
                    f"({r.penalty.text('max')} at worst).")
    return text
