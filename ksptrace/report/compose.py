"""The analysis report: the analysed runs (:mod:`ksptrace.studies.variability.pages.runs`) and every
registered study's result over them (:mod:`ksptrace.studies.registry`, the variability study
first), rendered as a small site (report.html, a page per run and per study, figures as PNG
files, or one self-contained page), one CSV per table and a summary.json, written whole or not
at all. Every table, answer and summary key comes from a study's
:class:`~ksptrace.studies.result.StudyResult`: no study is composed by hand here.

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
    analyse,
    analyse_files,
    cache_entry_name,
    config_key,
    prune_cache,
    units_line,
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


def all_tables(studies: Sequence[StudyResult]) -> list[Table]:
    """Every table written as CSV: each registered study's, in the registry's order."""
    return [t for r in studies for t in r.tables]


def render_html(results: Results, metadata: dict[str, Any], links: Sequence[tuple[str, str]] = (),
                single_file: bool = True) -> str:
    """The main page as one HTML string (by default with every run's section and figure
    inline); ``links``: pages beside it (address, title). The registered studies are run
    over ``results`` unless it holds their results already."""
    if not results.studies:
        results = with_studies(results)
    return render_site(results, metadata, links, single_file).pages[MAIN]


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def summary(results: Results, table_list: Sequence[Table],
            metadata: dict[str, Any], extra: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The machine-readable digest: metadata, the answers, each study's own keys (the
    variability study's ``traces`` and ``fastest``, ...), every table and the skips."""
    digest: dict[str, Any] = {
        "metadata": metadata,
        "answers": [*merged(results.studies),
                    *({**e, "sentences": list(e["sentences"])} for e in extra)],
    }
    for r in results.studies:
        digest.update(r.summary)
    digest["tables"] = {t.name: t.records() for t in table_list}
    digest["skipped"] = [{"path": s.path, "reason": s.reason} for s in results.skipped]
    return digest


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
    table_list = all_tables(results.studies)
    metadata = metadata_of(results)
    site = render_site(results, metadata, links, single_file, extra)
    digest = summary(results, table_list, metadata, extra)
    digest["pages"] = [{"href": href, "title": title} for href, title in links]
    doc = json.dumps(digest, indent=2, default=_jsonable)
    with staged_directory(out, EARLIER) as tmp:
        for t in table_list:
            (tmp / f"{t.name}.csv").write_text(t.to_csv())
        _write_site(tmp, site)
        (tmp / "summary.json").write_text(doc + "\n")
    return Report(out, out / MAIN, out / "summary.json",
                  tuple(out / f"{t.name}.csv" for t in table_list), len(results.analysed),
                  results.skipped, units_line(analyses, results.options.independent))
