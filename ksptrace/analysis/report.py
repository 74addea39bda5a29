"""The analysis report: traces grouped by configuration, analysed one by one (never pooled),
rendered as one self-contained report.html (figures inlined as base64 PNG), the tables as CSV
and a summary.json. Rendering is pure; ``write_report`` is the only function that writes.
"""

from __future__ import annotations

import base64
import html
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace import __version__
from ksptrace.analysis import figures, tables
from ksptrace.analysis.pipeline import AnalysisOptions, Progress, TraceAnalysis, analyze_trace
from ksptrace.errors import AnalysisError, UsageError
from ksptrace.trace.model import Trace

Figures = list[tuple[str, bytes]]


@dataclass(frozen=True)
class Skipped:
    """A trace left out of the report, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Report:
    """What was written."""

    directory: Path
    html: Path
    summary: Path
    csv: tuple[Path, ...]
    analysed: int
    skipped: tuple[Skipped, ...]


def config_label(trace: Trace) -> str:
    """A readable name of the configuration a trace belongs to."""
    return ", ".join(f"{k}={v}" for k, v in trace.config_key() if v is not None)


def group_by_config(traces: Sequence[Trace]) -> dict[str, list[Trace]]:
    """Traces grouped by configuration, ordered by problem, solver, n and P."""
    groups: dict[str, list[Trace]] = {}
    for t in sorted(traces, key=_order):
        groups.setdefault(config_label(t), []).append(t)
    return groups


def _order(trace: Trace) -> tuple[str, str, float, int, str]:
    a = trace.attrs
    n = a.get("n")
    return (str(a.get("problem", "")), str(a.get("ksp", "")),
            float(n) if isinstance(n, int | float) else 0.0, trace.nprocs, trace.path or "")


def trace_figures(trace: Trace, a: TraceAnalysis) -> Figures:
    """Every per-trace figure of the paper, as (caption, PNG)."""
    times = trace.iteration_seconds
    out: Figures = []

    def add(caption: str, fig: Any) -> None:
        out.append((caption, figures.to_png(fig)))

    add("Per-rank histograms", figures.rank_histograms(times, (0, min(1, a.nprocs - 1))))
    add(
        f"T_p^k against rank, k = {a.focus_iteration}",
        figures.iteration_vs_rank(times, a.focus_iteration, trace.node_ids),
    )
    mid = a.layout.at_position(a.layout.middle_position())
    add("Colormap of equal-work iterations", figures.colormap(times, mid if mid.size > 1 else None))
    if a.bulk is not None:
        add("Bulk histogram with fitted pdfs", figures.bulk_fit(a.bulk))
    ks_shown = sorted({int(mid[0]), int(mid[min(1, mid.size - 1)])}) if mid.size else [0]
    add("Iterations with uniform fits", figures.uniform_fits(times, ks_shown))
    add("a_k and s_k with Johnson S_U fits", figures.uniform_parameters(a.uniform, a.parameters))
    if a.layout.cycle_length > 1:
        first = a.layout.keep(True)[0] % a.layout.cycle_length if a.iterations else 0
        positions = sorted({int(first), a.layout.middle_position(), a.layout.cycle_length - 1})
        add(
            "Histograms by restart-cycle position",
            figures.cycle_histograms(times, a.layout, positions),
        )
    return out


def scaling_figures(analyses: Sequence[TraceAnalysis]) -> Figures:
    """Johnson S_U curves across P and across n, for every group with two or more values."""
    out: Figures = []
    for across, key, fixed in (("P", "nprocs", "n"), ("n", "n", "nprocs")):
        groups: dict[tuple[str, ...], list[TraceAnalysis]] = {}
        for a in analyses:
            attrs = dict(a.attrs)
            groups.setdefault((str(attrs.get("problem")), a.ksp, str(attrs.get(fixed))), []).append(
                a
            )
        for g, members in groups.items():
            entries = [
                (f"{key}={dict(m.attrs).get(key)}", m.parameters)
                for m in members
                if m.parameters is not None
            ]
            if len({label for label, _ in entries}) < 2:
                continue
            fig = figures.scaling_curves(entries, f"{across} ({', '.join(g)})")
            out.append((f"Johnson S_U across {across}: {', '.join(g)}", figures.to_png(fig)))
    return out


def all_tables(analyses: Sequence[TraceAnalysis], options: AnalysisOptions) -> list[tables.Table]:
    return [
        tables.model_table(analyses),
        tables.prediction_table(analyses),
        tables.apriori_table(analyses, runs=options.mc_runs, seed=options.seed),
        tables.scaling_table(analyses, "P"),
        tables.scaling_table(analyses, "n"),
        tables.variability_table(analyses),
    ]


STYLE = """body{font-family:sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;font-size:12px;margin:0.5em 0}
td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}
th{background:#eee}.note{color:#555;font-size:12px}img{max-width:100%}
.skip{color:#a00}"""


def _img(caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>"
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def render_html(
    groups: dict[str, list[TraceAnalysis]],
    table_list: Sequence[tables.Table],
    per_trace: dict[int, Figures],
    shared: Figures,
    skipped: Sequence[Skipped],
    metadata: dict[str, Any],
) -> str:
    """The whole report as one HTML string."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>ksptrace report</title>"
        f"<style>{STYLE}</style></head><body><h1>ksptrace analysis report</h1>"
    ]
    meta = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in metadata.items()
    )
    parts.append(f"<h2>Run metadata</h2><table>{meta}</table>")
    if skipped:
        items = "".join(f"<li>{html.escape(s.path)}: {html.escape(s.reason)}</li>" for s in skipped)
        parts.append(f"<h2>Skipped traces</h2><ul class='skip'>{items}</ul>")
    parts.append("<h2>Tables</h2>")
    parts.extend(t.to_html() for t in table_list)
    for label, members in groups.items():
        parts.append(f"<h2>Configuration: {html.escape(label)}</h2>")
        if len(members) > 1:
            parts.append(f"<p class='note'>{len(members)} repetitions, analysed separately.</p>")
        for a in members:
            parts.append(f"<h3>{html.escape(a.path or a.label)}</h3>")
            for note in a.notes:
                parts.append(f"<p class='note'>Not computed: {html.escape(note)}</p>")
            parts.append(tables.fit_table(a).to_html())
            parts.extend(_img(c, p) for c, p in per_trace.get(id(a), []))
    if shared:
        parts.append("<h2>Scaling</h2>")
        parts.extend(_img(c, p) for c, p in shared)
    parts.append("</body></html>")
    return "\n".join(parts)


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def summary(
    analyses: Sequence[TraceAnalysis],
    skipped: Sequence[Skipped],
    table_list: Sequence[tables.Table],
    metadata: dict[str, Any],
) -> dict[str, Any]:
    """The machine-readable digest: metadata, each trace's key numbers, tables, skips."""
    return {
        "metadata": metadata,
        "traces": [
            {
                "trace": a.path or a.label,
                "label": a.label,
                "ksp": a.ksp,
                "pipelined": a.pipelined,
                "nprocs": a.nprocs,
                "independent_units": a.count,
                "iterations": a.iterations,
                "iterations_kept": a.kept,
                "kspsolve": a.measured,
                "nonstationary_standard": a.nonstationary.standard,
                "nonstationary_pipelined": a.nonstationary.pipelined,
                "stationary": {
                    m.family: {"standard": m.standard, "pipelined": m.pipelined}
                    for m in a.stationary
                },
                "best_fit": None if a.bulk is None or not a.bulk.fits else a.bulk.best.name,
                "simulated": a.simulated,
                "ks_fraction_rejected": None if a.ks_all is None else a.ks_all.fraction_rejected,
                "notes": list(a.notes),
            }
            for a in analyses
        ],
        "tables": {
            t.name: [{k: _jsonable(v) for k, v in r.items()} for r in t.records()]
            for t in table_list
        },
        "skipped": [{"path": s.path, "reason": s.reason} for s in skipped],
    }


def write_report(
    out_dir: str | Path,
    traces: Sequence[Trace],
    skipped: Sequence[Skipped] = (),
    options: AnalysisOptions | None = None,
    progress: Progress | None = None,
    with_figures: bool = True,
    on_skip: Callable[[Skipped], None] | None = None,
) -> Report:
    """Analyse ``traces`` and write report.html, one CSV per table and summary.json."""
    opt = options or AnalysisOptions()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory; choose another --out")
    skips = list(skipped)
    groups: dict[str, list[TraceAnalysis]] = {}
    per_trace: dict[int, Figures] = {}
    analysed: list[TraceAnalysis] = []
    started = time.time()
    for label, members in group_by_config(traces).items():
        for trace in members:
            name = trace.path or trace.label

            def tick(step: str, fraction: float, name: str = name) -> None:
                if progress is not None:
                    progress(f"{name}: {step}", fraction)

            try:
                a = analyze_trace(trace, opt, tick)
            except AnalysisError as exc:
                skip = Skipped(name, str(exc))
                skips.append(skip)
                if on_skip is not None:
                    on_skip(skip)
                continue
            analysed.append(a)
            groups.setdefault(label, []).append(a)
            if with_figures:
                tick("figures", 0.0)
                per_trace[id(a)] = trace_figures(trace, a)
                tick("figures", 1.0)
    if not analysed:
        reasons = "; ".join(
            s.reason if s.reason.startswith(s.path) else f"{s.path}: {s.reason}" for s in skips
        ) or "no trace given"
        raise AnalysisError(f"no trace could be analysed ({reasons}); pass valid trace files")
    table_list = all_tables(analysed, opt)
    shared = scaling_figures(analysed) if with_figures else []
    metadata: dict[str, Any] = {
        "ksptrace": __version__,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "traces analysed": len(analysed),
        "traces skipped": len(skips),
        "configurations": len(groups),
        "alpha": opt.alpha,
        "independent units": opt.independent,
        "fit subsample": opt.fit_size,
        "candidates": " ".join(opt.candidates),
        "Monte Carlo runs": opt.mc_runs,
        "seed": opt.seed,
        "pipeline-fill iterations dropped": opt.drop_fill,
    }
    out.mkdir(parents=True, exist_ok=True)
    csv_paths = []
    for t in table_list:
        p = out / f"{t.name}.csv"
        p.write_text(t.to_csv())
        csv_paths.append(p)
    html_path = out / "report.html"
    html_path.write_text(render_html(groups, table_list, per_trace, shared, skips, metadata))
    summary_path = out / "summary.json"
    doc = summary(analysed, skips, table_list, metadata)
    summary_path.write_text(json.dumps(doc, indent=2, default=_jsonable) + "\n")
    return Report(out, html_path, summary_path, tuple(csv_paths), len(analysed), tuple(skips))
