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
from ksptrace.report.answers import merged
from ksptrace.report.pages import MAIN, Site, render_site
from ksptrace.studies import registry
from ksptrace.studies.result import StudyResult
from ksptrace.studies.table import Table
from ksptrace.studies.variability import (
    AnalysisOptions,
    Reporter,
    Results,
    Skipped,
    TraceAnalysis,
    analyse,
    analyse_files,
    answer_all,
    apriori_table,
    cache_entry_name,
    caveats,
    config_key,
    fastest_summary,
    fit_mapping,
    fits_table,
    headline,
    heldout_table,
    model_table,
    n_of,
    prediction_table,
    problem_of,
    prune_cache,
    scaling_table,
    units_line,
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
    units: str | None = None
    """The line on the independent units the default chose (None when the user chose)."""


def all_tables(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
               studies: Sequence[StudyResult] = ()) -> list[Table]:
    """Every table written as CSV: the variability study's, then each other study's."""
    return [
        model_table(analyses),
        prediction_table(analyses),
        heldout_table(analyses),
        apriori_table(analyses, runs=options.mc_runs, seed=options.seed),
        scaling_table(analyses, "P"),
        scaling_table(analyses, "n"),
        variability_table(analyses),
        fits_table(analyses),
        *(t for r in studies for t in r.tables),
    ]


def render_html(results: Results, table_list: Sequence[Table],
                metadata: dict[str, Any], links: Sequence[tuple[str, str]] = (),
                single_file: bool = True) -> str:
    """The main page as one HTML string (by default with every run's section and figure
    inline); ``links``: pages beside it (address, title)."""
    return render_site(results, table_list, metadata, links, single_file).pages[MAIN]


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def summary(results: Results, table_list: Sequence[Table],
            metadata: dict[str, Any], extra: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The machine-readable digest: metadata, each trace's key numbers, tables, skips."""
    out = []
    for d in results.analysed:
        a = d.analysis
        chosen = headline(a)
        out.append({
            "trace": a.path or a.label,
            "label": a.label,
            "problem": problem_of(a),
            "n": n_of(a),
            "ksp": a.ksp,
            "pipelined": a.pipelined,
            "nprocs": a.nprocs,
            "n_nodes": a.n_nodes,
            "independent_units": a.count,
            "iterations": a.iterations,
            "iterations_kept": a.kept,
            "kspsolve": a.measured,
            "setup": a.setup,
            "sum_k_max_p_T": a.lockstep_sum,
            "max_p_sum_k_T": a.rank_sum_max,
            "nonstationary_standard": a.nonstationary.standard,
            "nonstationary_pipelined": a.nonstationary.pipelined,
            "stationary": {m.family: {"standard": m.standard, "pipelined": m.pipelined}
                           for m in a.stationary},
            "best_fit": a.best_fit_name,
            "fits": fit_mapping(a),
            "simulated": a.simulated,
            "simulated_stderr": a.simulated_stderr,
            "ks_fraction_rejected": None if a.ks_all is None else a.ks_all.fraction_rejected,
            "headline_model": None if chosen is None else chosen.key,
            "headline_error_pct": None if chosen is None else chosen.error_pct,
            "headline_error_basis": "in-sample fit",
            "caveats": list(caveats(a)),
            "flags": [{"code": f.code, "subject": f.subject, "message": f.message}
                      for f in a.flags],
            "notes": list(a.notes),
        })
    return {
        "metadata": metadata,
        "answers": [*merged(answer_all([d.analysis for d in results.analysed]),
                            results.studies),
                    *({**e, "sentences": list(e["sentences"])} for e in extra)],
        "traces": out,
        "fastest": fastest_summary([d.analysis for d in results.analysed]),
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
    single_file: bool = False,
    extra: Sequence[dict[str, Any]] = (),
) -> Report:
    """``write_report`` for trace files: in ``jobs`` processes, with the per-trace results
    kept in ``cache`` (None: no cache) for the next run; entries of traces no longer given
    are removed once the report is written. ``links`` are (relative address, title) of pages
    written beside the report (the collectives page), listed in its contents; ``extra`` are
    answers of other studies (key, question, sentences) shown after the report's own."""
    out = Path(out_dir)
    check_destination(out, EARLIER)
    results = analyse_files(paths, options, progress, with_figures, jobs, cache)
    report = write_results(out, results, progress, links, single_file, extra)
    if cache is not None:
        opt = results.options
        keep = set()
        for p in paths:
            try:
                keep.add(cache_entry_name(p, opt, with_figures))
            except (OSError, KsptraceError):
                continue
        prune_cache(cache, keep)
    return report


def _write_site(folder: Path, site: Site) -> None:
    for name, data in site.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    for name, text in site.pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def write_results(out: Path, results: Results, progress: Reporter | None = None,
                  links: Sequence[tuple[str, str]] = (), single_file: bool = False,
                  extra: Sequence[dict[str, Any]] = ()) -> Report:
    """Write the report of analysed ``results`` (whole or not at all): report.html, a page per
    run and per study with their figures as files (``single_file``: one page, figures
    inline), one CSV per table and summary.json; ``links`` as in :func:`write_report_files`."""
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
    site = render_site(results, table_list, metadata, links, single_file, extra)
    digest = summary(results, table_list, metadata, extra)
    digest["pages"] = [{"href": href, "title": title} for href, title in links]
    for r in results.studies:
        digest.update(r.summary)
    doc = json.dumps(digest, indent=2, default=_jsonable)
    with staged_directory(out, EARLIER) as tmp:
        for t in table_list:
            (tmp / f"{t.name}.csv").write_text(t.to_csv())
        _write_site(tmp, site)
        (tmp / "summary.json").write_text(doc + "\n")
    return Report(out, out / MAIN, out / "summary.json",
                  tuple(out / f"{t.name}.csv" for t in table_list), len(results.analysed),
                  results.skipped, units_line(analyses, results.options.independent))
