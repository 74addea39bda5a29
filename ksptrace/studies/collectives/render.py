"""Rendering the collectives section: Markdown best-algorithm tables, figures, the HTML page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ksptrace.studies.collectives.report import SIGNIFICANT, CollectivesReport


def best_matrix(best: pd.DataFrame, op: str) -> pd.DataFrame:
    """Rows: message size; columns: P; cells: the fastest algorithm (and its margin)."""
    mine = best[best["op"] == op]
    if mine.empty:
        return pd.DataFrame()
    pv = mine["p_value"] if "p_value" in mine else pd.Series(np.nan, index=mine.index)
    cell = mine.assign(text=[
        f"{b} (+{mg:.0%}{'' if p < SIGNIFICANT else '~'}{'*' if o else ''})"
        if np.isfinite(mg) else str(b)
        for b, mg, p, o in zip(mine["best"], mine["margin"], pv, mine["oversubscribed"],
                               strict=True)])
    return cell.pivot(index="bytes", columns="P", values="text").sort_index()


def markdown_table(matrix: pd.DataFrame) -> str:
    cols = [str(c) for c in matrix.columns]
    lines = ["| m (bytes) | " + " | ".join(f"P = {c}" for c in cols) + " |",
             "|---:|" + "---|" * len(cols)]
    for m, row in matrix.iterrows():
        lines.append(f"| {m} | " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def frame_markdown(frame: pd.DataFrame) -> str:
    """A numeric table as Markdown, 3 significant digits."""
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    lines = [head, "|" + "---:|" * len(frame.columns)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    return "\n".join(lines)


def line_styles(algorithms: list[str]) -> dict[str, tuple[str, str]]:
    """One (colour, line style) per algorithm label, the same in every panel of a figure
    (issue 66: panels coloured in their own order, and one legend for all, named the P = 2
    back-to-back curve segmented_ring/seg1024)."""
    dashes = ("-", "--", ":", "-.")
    return {a: (f"C{i % 10}", dashes[(i // 10) % len(dashes)])
            for i, a in enumerate(algorithms)}


def figures(frame: pd.DataFrame) -> list[tuple[str, bytes]]:
    """Per operation: latency (log-log) and bandwidth over message size, one panel per P and
    one line per algorithm; (title, PNG bytes)."""
    from ksptrace.studies.drawing import _figure, to_png

    out = []
    for op, g in frame.groupby("op"):
        if g["bytes"].nunique() < 2:
            continue
        ps = sorted(set(g["P"]))
        fig = _figure(height=3.2 * 2)
        axes = fig.subplots(2, len(ps), squeeze=False)
        style = line_styles(sorted(set(g["algorithm"])))
        for k, p in enumerate(ps):
            for alg, line in g[g["P"] == p].groupby("algorithm"):
                line = line.sort_values("bytes")
                color, dash = style[str(alg)]
                axes[0][k].loglog(line["bytes"], line["median_us"], marker=".", label=alg,
                                  color=color, linestyle=dash)
                axes[1][k].semilogx(line["bytes"], line["MB_per_s"], marker=".", label=alg,
                                    color=color, linestyle=dash)
            over = bool(g[g["P"] == p]["oversubscribed"].any())
            axes[0][k].set_title(f"P = {p}" + (" (oversubscribed)" if over else ""))
            axes[1][k].set_xlabel("message size (bytes per rank)")
            axes[0][k].legend(fontsize="x-small")  # each panel names its own curves
        axes[0][0].set_ylabel("median time (us)")
        axes[1][0].set_ylabel("MB/s (m / time)")
        out.append((f"{op}: latency and bandwidth per algorithm", to_png(fig)))
    return out


def markdown(report: CollectivesReport) -> str:
    """The best-algorithm tables as Markdown, one per operation (for notes and docs)."""
    parts = []
    for op in sorted(set(report.best["op"])):
        parts += [f"### {op}: fastest algorithm per (P, m)", "",
                  markdown_table(best_matrix(report.best, op)), ""]
    for t in report.tables:
        if t.name in ("collectives_plogp", "collectives_plogp_steps"):
            shown = t.shown if t.name.endswith("_steps") and isinstance(
                t.shown, pd.DataFrame) else t.frame
            parts += [f"### {t.title}", "", frame_markdown(shown), "",
                      *(f"- {n}" for n in t.notes), ""]
    parts += [f"- {n}" for n in report.notes]
    if not report.best.empty:
        parts.append("- cells: fastest algorithm (+how much slower the runner-up is); ~: not told "
                     f"apart from the runner-up (one-sided Mann-Whitney on the repetitions, "
                     f"p >= {SIGNIFICANT})")
    return "\n".join(parts) + "\n"
