"""The segmentation report over process counts: series from traces, their segmentation, and
the files that show it (plots, ``segment.json``, ``segment.md``, ``segment.html``, Extra-P text).

Traces are grouped by (problem, ksp); within a group every trace is one measurement at its P
(traces at the same P are repetitions, reduced to their minimum by default: see
:mod:`ksptrace.studies.segmentation.load` for why, and for the load and spread notes). Four metrics
are modelled over P: the undisturbed time (K times a low quantile of each iteration's slowest
rank, which a busy process beside the job leaves alone), the KSPSolve time (slowest rank), the
mean iteration time (over ranks and iterations) and the Johnson SU location of a_k (each
iteration's fastest rank). For each group
and metric the report gives the data, the single PMNF model, the change point and the segment
models, as a plot, as text in Extra-P's notation, in ``segment.json``, ``segment.md`` and
``segment.html``, and as an Extra-P text input file. Writing goes into a folder the caller
provides (the CLI stages it).
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ksptrace.errors import AnalysisError, KsptraceError
from ksptrace.studies.segmentation.extrap_export import (
    ExtrapSeries,
    group_repetitions,
    to_extrap_text,
)
from ksptrace.studies.segmentation.load import SweepLoad, sweep_load, undisturbed_time
from ksptrace.studies.segmentation.segment import Segmentation, SegmentationParams, segment
from ksptrace.trace.model import Trace


def johnsonsu_location(trace: Trace) -> float:
    """The location of a Johnson SU fitted to a_k = min over ranks of each iteration's time."""
    from ksptrace.studies.variability.fitting import fit_johnsonsu

    a_k = trace.iteration_seconds.min(axis=0)
    return float(fit_johnsonsu(a_k, fit_size=5000).loc)


METRICS: tuple[tuple[str, str, Callable[[Trace], float]], ...] = (
    ("undisturbed_time", "K x 5 % quantile of the slowest rank's iteration time [s]",
     lambda t: undisturbed_time(t.iteration_seconds)),
    ("solve_time", "KSPSolve time [s]", lambda t: t.solve_max),
    ("mean_iteration_time", "mean iteration time [s]", lambda t: float(t.iteration_seconds.mean())),
    ("johnsonsu_loc_ak", "Johnson SU location of a_k [s]", johnsonsu_location),
)
"""(key, label, value of one trace) for each modelled metric."""


@dataclass(frozen=True)
class SeriesReport:
    group: tuple[str, str]
    metric: str
    label: str
    p: np.ndarray
    y: np.ndarray
    result: Segmentation
    skipped: tuple[str, ...]
    load: SweepLoad | None = None


def collect(traces: list[Trace]) -> dict[tuple[str, str], list[Trace]]:
    """Series over P: one per (problem, ksp), split further by pc, K and n when those vary.

    A weak-scaling series (one n per P) stays together; but when one P was measured at several
    n (or with several PCs or iteration counts) those are different configurations, never
    repetitions, so each gets its own series.
    """
    groups: dict[tuple[str, str], list[Trace]] = {}
    for t in traces:
        key = (str(t.attrs.get("problem", "unknown")), str(t.attrs.get("ksp", "unknown")))
        groups.setdefault(key, []).append(t)
    out: dict[tuple[str, str], list[Trace]] = {}
    for (problem, ksp), members in groups.items():
        by_p: dict[int, set[tuple[str, ...]]] = {}
        for t in members:
            by_p.setdefault(t.nprocs, set()).add(_sub_key(t, ("pc", "iterations", "n")))
        split = [name for name in ("pc", "iterations", "n")
                 if any(len({k[("pc", "iterations", "n").index(name)] for k in keys}) > 1
                        for keys in by_p.values())]
        for t in members:
            label = ksp + "".join(f" {name}={t.attrs.get(name)}" for name in split)
            out.setdefault((problem, label), []).append(t)
    return out


def _sub_key(trace: Trace, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(trace.attrs.get(name)) for name in names)


def analyse(
    group: tuple[str, str],
    traces: list[Trace],
    params: SegmentationParams,
    metrics: tuple[str, ...],
    reduce: Literal["median", "min"] = "min",
) -> list[SeriesReport]:
    reports = []
    for key, label, value in METRICS:
        if key not in metrics:
            continue
        p, y, skipped = [], [], []
        for t in traces:
            try:
                v = value(t)
            except (KsptraceError, ValueError, FloatingPointError) as exc:
                skipped.append(f"{t.path or t.label}: {exc}")
                continue
            p.append(float(t.nprocs))
            y.append(v)
        pa, ya = np.array(p), np.array(y)
        load = sweep_load(traces, pa, ya)
        result = segment(pa, ya, params, reduce=reduce, cores=load.cores)
        reports.append(SeriesReport(group, key, label, pa, ya, result, tuple(skipped), load))
    return reports


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "series"


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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def to_json(rep: SeriesReport) -> dict[str, Any]:
    res = rep.result
    return {
        "problem": rep.group[0], "ksp": rep.group[1], "metric": rep.metric,
        "p": rep.p.tolist(), "values": rep.y.tolist(),
        "p_distinct": res.p.tolist(), "reduced": res.y.tolist(),
        "load": None if rep.load is None else rep.load.as_dict(),
        "detection_ran": res.ok, "segmented": res.segmented, "pattern": res.pattern,
        "window_nrss": [round(float(v), 6) for v in res.window_nrss],
        "single_model": None if res.single is None else str(res.single),
        "change_points": [{"p_lo": c.p_lo, "p_hi": c.p_hi, "text": str(c)}
                          for c in res.change_points],
        "segments": [{"p_first": s.p_range[0], "p_last": s.p_range[1],
                      "model": None if s.model is None else str(s.model), "advice": s.advice}
                     for s in res.segments],
        "notes": list(res.notes) + list(rep.skipped)
                 + (list(rep.load.notes()) if rep.load is not None else []),
    }  # fmt: skip


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
    body: list[str] = []
    records = []
    texts: list[str] = []
    for group, members in sorted(collect(list(traces)).items()):
        md += [
            f"### {group[0]} / {group[1]} ({len(members)} traces, "
            f"P = {sorted({t.nprocs for t in members})})",
            "",
        ]
        body.append(f"<h3>{html.escape(group[0])} / {html.escape(group[1])}</h3>")
        for rep in analyse(group, members, params, metrics, reduce):
            stem = _slug(f"{group[0]}_{group[1]}_{rep.metric}")
            record = to_json(rep)
            text = rep.result.describe() + "".join(f"\nskipped {s}" for s in rep.skipped)
            if rep.load is not None:
                text += "".join(f"\n{note}" for note in rep.load.notes())
            texts.append(f"{group[0]} / {group[1]} / {rep.label}:\n  " + text.replace("\n", "\n  "))
            md += [f"#### {rep.label}", "", "```", text, "```", ""]
            body.append(f"<h4>{html.escape(rep.label)}</h4><pre>{html.escape(text)}</pre>")
            if plots and rep.result.p.size:
                png = folder / f"{stem}.png"
                plot(rep, png)
                record["plot"] = png.name
                md += [f"![{rep.label}]({png.name})", ""]
                body.append(f'<img src="{html.escape(png.name)}" alt="{html.escape(rep.label)}">')
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
    (folder / "segment.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>ksptrace segment</title></head>"
        "<body><h2>Segmentation over process counts</h2>" + "\n".join(body) + "</body></html>\n"
    )
    return SegmentReport(tuple(texts), tuple(sorted(p.name for p in folder.iterdir())))
