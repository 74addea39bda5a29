"""The segmentation study's files: a plot per series, ``segment.json``, ``segment.md``,
``segment.html`` and an Extra-P text input file per series, written into a folder the caller
provides (the CLI stages it)."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ksptrace import escape
from ksptrace.errors import AnalysisError
from ksptrace.report.templating import ENV
from ksptrace.studies.drawing import bound_texts
from ksptrace.studies.segmentation import (
    ExtrapSeries,
    SegmentationParams,
    SeriesReport,
    analyse,
    collect,
    group_repetitions,
    to_extrap_text,
    to_json,
)
from ksptrace.trace.model import Trace
from ksptrace.version import __version__


def _slug(text: str) -> str:
    """A file stem of trace strings: safe characters only, at most 120 of them."""
    return escape.file_stem(re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_"), 120)


def plot(rep: SeriesReport, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = rep.result
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(rep.p, rep.y, "o", color="0.7", ms=4, label="measurements")
    ax.plot(res.p, res.y, "o", color="k", ms=5, label="value per p (repetitions reduced)")
    if res.p.size:
        grid = np.linspace(res.p[0], res.p[-1], 200)
        if res.single is not None:
            ax.plot(grid, res.single(grid), "--", color="tab:gray", label=f"single: {res.single}")
        if res.segmented:
            for k, seg in enumerate(res.segments):
                if seg.model is None:
                    continue
                g = np.linspace(seg.p[0], seg.p[-1], 100)
                ax.plot(g, seg.model(g), "-", color=f"C{k}", label=f"segment {k + 1}: {seg.model}")
            for cp in res.change_points:
                ax.axvline((cp.p_lo + cp.p_hi) / 2, color="tab:red", ls=":", label=f"change {cp}")
    if res.p.size >= 3 and np.allclose(res.p[1:] / res.p[:-1], res.p[1] / res.p[0]):
        ax.set_xscale("log", base=2)
    ax.set_xlabel("p (MPI ranks)")
    ax.set_ylabel("\n".join(textwrap.wrap(rep.label, 40)))  # a long label fits the axis
    ax.set_title(f"{rep.group[0]} / {rep.group[1]}: {rep.label}", fontsize=10)
    ax.legend(fontsize=7)
    bound_texts(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass(frozen=True)
class SegmentReport:
    """What :func:`write_segment_report` wrote: one text block per series, and the file names."""

    texts: tuple[str, ...]
    files: tuple[str, ...]


def write_segment_report(
    folder: Path,
    traces: Iterable[Trace],
    params: SegmentationParams,
    metrics: tuple[str, ...],
    plots: bool = True,
    reduce: Literal["median", "min"] = "min",
) -> SegmentReport:
    """Segment every series of ``traces`` and write the report's files into ``folder``."""
    md = ["## Segmentation over process counts", ""]
    groups: list[dict[str, Any]] = []
    records = []
    texts: list[str] = []
    for group, members in sorted(collect(list(traces)).items()):
        md += [
            f"### {group[0]} / {group[1]} ({len(members)} traces, "
            f"P = {sorted({t.nprocs for t in members})})",
            "",
        ]
        series: list[dict[str, Any]] = []
        counts = ", ".join(str(p) for p in sorted({t.nprocs for t in members}))
        groups.append({"title": f"{group[0]} / {group[1]} ({len(members)} traces, P = {counts})",
                       "series": series})
        for rep in analyse(group, members, params, metrics, reduce):
            stem = _slug(f"{group[0]}_{group[1]}_{rep.metric}")
            record = to_json(rep)
            text = rep.result.describe() + "".join(f"\nskipped {s}" for s in rep.skipped)
            if rep.load is not None:
                text += "".join(f"\n{note}" for note in rep.load.notes())
            texts.append(f"{group[0]} / {group[1]} / {rep.label}:\n  " + text.replace("\n", "\n  "))
            md += [f"#### {rep.label}", "", "```", text, "```", ""]
            shown: dict[str, Any] = {"label": rep.label, "lines": text.splitlines(), "png": None,
                                     "why": "no points" if plots else "figures were not asked for"}
            series.append(shown)
            if plots and rep.result.p.size:
                png = folder / f"{stem}.png"
                plot(rep, png)
                record["plot"] = png.name
                md += [f"![{rep.label}]({png.name})", ""]
                shown["png"] = png.name
            if rep.result.p.size:
                try:
                    pts, reps = group_repetitions(rep.p, rep.y)
                    txt = to_extrap_text(
                        "p",
                        pts,
                        [ExtrapSeries("KSPSolve", rep.metric, reps)],
                        {"problem": group[0], "ksp": group[1], "metric": rep.label},
                    )
                except AnalysisError as exc:
                    record["notes"].append(f"no Extra-P export: {exc}")
                else:
                    (folder / f"{stem}.extrap.txt").write_text(txt)
                    record["extrap_text"] = f"{stem}.extrap.txt"
            records.append(record)
    (folder / "segment.json").write_text(
        json.dumps({"params": params.__dict__, "series": records}, indent=1) + "\n"
    )
    (folder / "segment.md").write_text("\n".join(md) + "\n")
    (folder / "segment.html").write_text(ENV.get_template("segment.html.j2").render(
        groups=groups, version=__version__, home=None), encoding="utf-8")
    return SegmentReport(tuple(texts), tuple(sorted(p.name for p in folder.iterdir())))
