"""The analysis report: the variability study's runs (:mod:`ksptrace.studies.variability.runs`)
and every registered study's result over them, rendered as one self-contained report.html
(Jinja2 template, inline CSS, figures as base64 PNG), one CSV per table and a summary.json,
written whole or not at all.

``render_html`` and ``summary`` are pure; ``write_results`` is the only function that writes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.errors import AnalysisError, KsptraceError
from ksptrace.outputs import check_destination, staged_directory
from ksptrace.report import studies as study_view
from ksptrace.report.templating import ENV
from ksptrace.studies import registry
from ksptrace.studies.result import StudyResult
from ksptrace.studies.table import Table
from ksptrace.studies.variability import (
    SECTIONS,
    AnalysisOptions,
    Reporter,
    Results,
    Skipped,
    TraceAnalysis,
    analyse,
    analyse_files,
    anchors,
    apriori_table,
    cache_entry_name,
    config_key,
    finding_row,
    image,
    ks_alpha_note,
    model_table,
    prediction_table,
    prune_cache,
    run_section,
    scaling_table,
    sentences,
    variability_table,
)
from ksptrace.trace.model import Trace
from ksptrace.version import __version__


@dataclass(frozen=True)
class Report:
    """What was written."""

    directory: Path
    html: Path
    summary: Path
    csv: tuple[Path, ...]
    analysed: int
    skipped: tuple[Skipped, ...]


def all_tables(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
               studies: Sequence[StudyResult] = ()) -> list[Table]:
    """Every table written as CSV: the variability study's, then each other study's."""
    return [
        model_table(analyses),
        prediction_table(analyses),
        apriori_table(analyses, runs=options.mc_runs, seed=options.seed),
        scaling_table(analyses, "P"),
        scaling_table(analyses, "n"),
        variability_table(analyses),
        *(t for r in studies for t in r.tables),
    ]


def render_html(results: Results, table_list: Sequence[Table],
                metadata: dict[str, Any], links: Sequence[tuple[str, str]] = ()) -> str:
    """The whole report as one HTML string; ``links``: pages beside it (address, title)."""
    rows = anchors(results.analysed)
    opt = results.options
    across_tables = [t for t in table_list if t.name in ("table1_models", "apriori",
                                                         "scaling_nprocs", "scaling_n")]
    return ENV.get_template("report.html.j2").render(
        metadata=metadata,
        findings=[finding_row(f) for f in rows],
        sentences=sentences(rows),
        sections=[run_section(d, f, opt) for d, f in zip(results.analysed, rows, strict=True)],
        section_titles=SECTIONS,
        skipped=results.skipped,
        across_tables=[{"title": t.title, "html": t.to_html(), "notes": t.notes,
                        "empty": t.empty, "csv": f"{t.name}.csv"} for t in across_tables],
        across_figures=[image(p) for p in results.across],
        across_omitted=results.across_omitted,
        ks_note=ks_alpha_note(opt.alpha, opt.reference_rank),
        studies=[study_view.context(r) for r in results.studies if study_view.shown(r)],
        standalone=False,
        links=list(links),
    )


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def summary(results: Results, table_list: Sequence[Table],
            metadata: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable digest: metadata, each trace's key numbers, tables, skips."""
    out = []
    for d in results.analysed:
        a = d.analysis
        out.append({
            "trace": a.path or a.label,
            "label": a.label,
            "ksp": a.ksp,
            "pipelined": a.pipelined,
            "nprocs": a.nprocs,
            "n_nodes": a.n_nodes,
            "independent_units": a.count,
            "iterations": a.iterations,
            "iterations_kept": a.kept,
            "kspsolve": a.measured,
            "sum_k_max_p_T": a.lockstep_sum,
            "max_p_sum_k_T": a.rank_sum_max,
            "nonstationary_standard": a.nonstationary.standard,
            "nonstationary_pipelined": a.nonstationary.pipelined,
            "stationary": {m.family: {"standard": m.standard, "pipelined": m.pipelined}
                           for m in a.stationary},
            "best_fit": a.best_fit_name,
            "simulated": a.simulated,
            "simulated_stderr": a.simulated_stderr,
            "ks_fraction_rejected": None if a.ks_all is None else a.ks_all.fraction_rejected,
            "flags": [{"code": f.code, "subject": f.subject, "message": f.message}
                      for f in a.flags],
            "notes": list(a.notes),
        })
    return {
        "metadata": metadata,
        "traces": out,
        "tables": {t.name: t.records() for t in table_list},
        "skipped": [{"path": s.path, "reason": s.reason} for s in results.skipped],
    }


def metadata_of(results: Results) -> dict[str, Any]:
    opt = results.options
    return {
        "ksptrace": __version__,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(results.started)),
        "traces analysed": len(results.analysed),
        "traces skipped": len(results.skipped),
        "configurations": len({config_key(d.analysis) for d in results.analysed}),
        "alpha": opt.alpha,
        "reference rank": opt.reference_rank,
        "independent units": opt.independent,
        "fit subsample": opt.fit_size,
        "candidates": " ".join(opt.candidates),
        "Monte Carlo runs": opt.mc_runs,
        "seed": opt.seed,
        "pipeline-fill iterations dropped": opt.drop_fill,
    }


def with_studies(results: Results, progress: Reporter | None = None) -> Results:
    """``results`` with every registered study's result over its runs."""
    if progress is not None and results.analysed:
        progress.step("studies across runs: " + ", ".join(registry.STUDIES))
    studies = registry.over_runs([d.analysis for d in results.analysed], results.options,
                                 results.with_figures)
    return dataclasses.replace(results, studies=tuple(studies))


EARLIER = ("report.html", "summary.json")
"""A folder holding one of these is an earlier report (from before outputs.MARKER existed)."""


def write_report(
    out_dir: str | Path,
    traces: Iterable[Trace | KsptraceError],
    options: AnalysisOptions | None = None,
    progress: Reporter | None = None,
    with_figures: bool = True,
) -> Report:
    """Analyse ``traces`` one by one and write report.html, one CSV per table and summary.json.

    The folder is written whole or not at all (``OutputError`` on a full disk, an unwritable
    or read-only folder, or a destination under a file).
    """
    out = Path(out_dir)
    check_destination(out, EARLIER)  # before minutes of analysis
    return write_results(out, analyse(traces, options, progress, with_figures), progress)


def write_report_files(
    out_dir: str | Path,
    paths: Sequence[str | os.PathLike[str]],
    options: AnalysisOptions | None = None,
    progress: Reporter | None = None,
    with_figures: bool = True,
    jobs: int = 1,
    cache: Path | None = None,
    links: Sequence[tuple[str, str]] = (),
) -> Report:
    """``write_report`` for trace files: in ``jobs`` processes, with the per-trace results
    kept in ``cache`` (None: no cache) for the next run; entries of traces no longer given
    are removed once the report is written. ``links`` are (relative address, title) of pages
    written beside the report (the collectives page), listed in its contents."""
    out = Path(out_dir)
    check_destination(out, EARLIER)
    results = analyse_files(paths, options, progress, with_figures, jobs, cache)
    report = write_results(out, results, progress, links)
    if cache is not None:
        opt = results.options
        keep = set()
        for p in paths:
            try:
                keep.add(cache_entry_name(p, opt, with_figures))
            except OSError:
                continue
        prune_cache(cache, keep)
    return report


def write_results(out: Path, results: Results, progress: Reporter | None = None,
                  links: Sequence[tuple[str, str]] = ()) -> Report:
    """Write the report of analysed ``results`` (whole or not at all); ``links`` as in
    :func:`write_report_files`."""
    if not results.analysed:
        if progress is not None and results.skipped:  # each was named as it was skipped
            reasons = f"{len(results.skipped)} skipped, each named above"
        else:
            reasons = "; ".join(
                s.reason if s.reason.startswith(s.path) else f"{s.path}: {s.reason}"
                for s in results.skipped
            ) or "no trace given"
        raise AnalysisError(f"no trace could be analysed ({reasons}); pass valid trace files")
    analyses = [d.analysis for d in results.analysed]
    if not results.studies:
        results = with_studies(results, progress)
    if progress is not None:
        progress.step("tables and report")
    table_list = all_tables(analyses, results.options, results.studies)
    metadata = metadata_of(results)
    page = render_html(results, table_list, metadata, links)
    digest = summary(results, table_list, metadata)
    digest["pages"] = [{"href": href, "title": title} for href, title in links]
    for r in results.studies:
        digest.update(r.summary)
    doc = json.dumps(digest, indent=2, default=_jsonable)
    with staged_directory(out, EARLIER) as tmp:
        for t in table_list:
            (tmp / f"{t.name}.csv").write_text(t.to_csv())
        (tmp / "report.html").write_text(page, encoding="utf-8")
        (tmp / "summary.json").write_text(doc + "\n")
    return Report(out, out / "report.html", out / "summary.json",
                  tuple(out / f"{t.name}.csv" for t in table_list), len(results.analysed),
                  results.skipped)
