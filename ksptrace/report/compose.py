"""The analysis report: traces analysed one at a time (read, analysed, drawn, dropped; never
pooled), then rendered as one self-contained report.html (Jinja2 template, inline CSS, figures
as base64 PNG), one CSV per table and a summary.json, written whole or not at all.

``analyse`` is the only step that sees traces; ``render_html`` and ``summary`` are pure;
``write_report`` is the only function that writes.
"""

from __future__ import annotations

import base64
import functools
import gc
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ksptrace.errors import AnalysisError, KsptraceError
from ksptrace.outputs import check_destination, staged_directory
from ksptrace.report import studies as study_view
from ksptrace.report.templating import ENV
from ksptrace.studies import registry
from ksptrace.studies.result import StudyResult
from ksptrace.studies.variability import batch, figure_sets, findings, tables
from ksptrace.studies.variability.pipeline import (
    AnalysisOptions,
    Flag,
    TraceAnalysis,
    analyze_trace,
)
from ksptrace.trace.io import iter_traces
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS, Trace
from ksptrace.trace.solves import split
from ksptrace.version import __version__


class Reporter(Protocol):
    """The progress display the report reports to (``ksptrace.cli.progress.Progress``)."""

    def step(self, text: str) -> None: ...

    def advance(self, item: str, verdict: str = "ok") -> None: ...

    def note(self, text: str) -> None: ...


@dataclass(frozen=True)
class Skipped:
    """A trace left out of the report, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Picture:
    """A figure as the report shows it."""

    key: str
    title: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class Analysed:
    """What is kept of one trace once it has been analysed and drawn: no raw timings."""

    analysis: TraceAnalysis
    pictures: tuple[Picture, ...] = ()
    omitted: tuple[str, ...] = ()
    digest: figure_sets.TraceDigest | None = None


@dataclass(frozen=True)
class Several:
    """What a trace of several solves gave: one result per solve, or per pooled length
    (:func:`ksptrace.trace.solves.split`)."""

    path: str
    parts: tuple[Analysed | Skipped, ...]


def each(result: Analysed | Skipped | Several) -> tuple[Analysed | Skipped, ...]:
    """The per-configuration results of one trace's analysis."""
    return result.parts if isinstance(result, Several) else (result,)


def kept(result: object) -> bool:
    """Whether a trace's results go into the cache (a skip's reason may be transient)."""
    return isinstance(result, Analysed) or (
        isinstance(result, Several) and any(isinstance(p, Analysed) for p in result.parts))


@dataclass(frozen=True)
class Results:
    """Every analysed trace, in report order, what was skipped, and the cross-trace figures."""

    analysed: tuple[Analysed, ...]
    skipped: tuple[Skipped, ...]
    options: AnalysisOptions
    across: tuple[Picture, ...] = ()
    across_omitted: tuple[str, ...] = ()
    started: float = field(default_factory=time.time)
    with_figures: bool = True
    studies: tuple[StudyResult, ...] = ()
    """The registered studies over the analysed runs (:mod:`ksptrace.studies.registry`)."""


@dataclass(frozen=True)
class Report:
    """What was written."""

    directory: Path
    html: Path
    summary: Path
    csv: tuple[Path, ...]
    analysed: int
    skipped: tuple[Skipped, ...]


def _pictures(drawn: Iterable[figure_sets.Drawn]) -> tuple[Picture, ...]:
    return tuple(Picture(d.key, d.title, d.caption, d.png) for d in drawn)


def _order(a: TraceAnalysis) -> tuple[str, str, float, int, str]:
    n = findings.n_of(a)
    return (findings.problem_of(a), a.ksp, float(n or 0), a.nprocs, a.path or "")


def config_key(a: TraceAnalysis) -> tuple[str, ...]:
    """The configuration of an analysis; equal keys are repetitions."""
    attrs = dict(a.attrs)
    return (*(str(attrs.get(k, CONFIG_DEFAULTS.get(k))) for k in CONFIG_KEYS), str(a.nprocs))


def analyse_one(
    item: Trace | KsptraceError, opt: AnalysisOptions, with_figures: bool = True,
    tick: Callable[[str, float], None] | None = None,
) -> Analysed | Skipped | Several:
    """Analyse and draw one trace (or pass on the reader's error as a skip); a trace of
    several solves gives one result per solve, or per length with ``opt.pool_solves``."""
    if isinstance(item, KsptraceError):
        return Skipped(str(item).split(": ", 1)[0], str(item))
    trace = item
    if trace.solves is not None:
        parts = [analyse_one(part, opt, with_figures, tick)
                 for part in split(trace, opt.pool_solves)]
        return Several(trace.path or trace.label,
                       tuple(p for p in parts if isinstance(p, Analysed | Skipped)))
    name = trace.path or trace.label

    def step(text: str, fraction: float) -> None:
        if tick is not None:
            tick(f"{Path(name).name}: {text}", fraction)

    try:
        a = analyze_trace(trace, opt, step)
    except AnalysisError as exc:
        return Skipped(name, str(exc))
    pictures: tuple[Picture, ...] = ()
    omitted: tuple[str, ...] = ()
    digest = None
    if with_figures:
        step("figures", 0.0)
        drawn = figure_sets.trace_figures(trace, a)
        pictures, omitted = _pictures(drawn.drawn), tuple(drawn.omitted)
        digest = figure_sets.digest(trace, a)
    return Analysed(a, pictures, omitted, digest)


def analyse_file(path: str, opt: AnalysisOptions, with_figures: bool = True,
                 tick: Callable[[str, float], None] | None = None
                 ) -> Analysed | Skipped | Several:
    """Read, analyse and draw one trace file: the unit of work of ``analyse_files``.

    The trace is gone when this returns: the analysis and its figures leave reference cycles
    that hold the trace's arrays until the cyclic collector runs, which would otherwise keep
    one trace in memory while the next is read (1.75 GiB instead of 1.1 GiB at 8192 x 5000).
    """
    result: Analysed | Skipped | Several | None = None
    for item in iter_traces([path]):
        result = analyse_one(item, opt, with_figures, tick)
        del item
    gc.collect()
    if result is None:  # iter_traces yields once per path
        raise AnalysisError(f"{path}: the reader gave nothing")
    return result


def _ticker(progress: Reporter | None) -> Callable[[str, float], None] | None:
    if progress is None:
        return None
    return lambda text, fraction: progress.step(text)


def _advance(progress: Reporter | None, result: Analysed | Skipped | Several,
             cached: bool = False) -> None:
    if progress is None:
        return
    if isinstance(result, Several):
        done = sum(isinstance(p, Analysed) for p in result.parts)
        progress.advance(result.path, f"{'cached, ' if cached else ''}{done} of "
                                      f"{len(result.parts)} solves analysed")
    elif isinstance(result, Skipped):
        progress.advance(result.path, "skipped: " + result.reason.removeprefix(
            f"{result.path}: "))
    else:
        a = result.analysis
        progress.advance(a.path or a.label, "cached" if cached else "ok")


def analyse(
    items: Iterable[Trace | KsptraceError],
    options: AnalysisOptions | None = None,
    progress: Reporter | None = None,
    with_figures: bool = True,
) -> Results:
    """Analyse and draw each trace as it comes, keeping only results; name bad ones once."""
    opt = options or AnalysisOptions()
    started = time.time()
    done: list[Analysed] = []
    skipped: list[Skipped] = []
    for item in items:
        result = analyse_one(item, opt, with_figures, _ticker(progress))
        del item  # only results are kept
        gc.collect()  # and the cycles that still hold the trace (see analyse_file)
        for part in each(result):
            (skipped if isinstance(part, Skipped) else done).append(part)  # type: ignore[arg-type]
        _advance(progress, result)
    return gather(done, skipped, opt, with_figures, started, progress)


def analyse_files(
    paths: Sequence[str | os.PathLike[str]],
    options: AnalysisOptions | None = None,
    progress: Reporter | None = None,
    with_figures: bool = True,
    jobs: int = 1,
    cache: Path | None = None,
) -> Results:
    """Analyse trace files in ``jobs`` processes, reusing and filling the per-trace ``cache``
    (see ``batch``); the results do not depend on ``jobs``."""
    opt = options or AnalysisOptions()
    started = time.time()
    done: list[Analysed] = []
    skipped: list[Skipped] = []
    worker: batch.Worker = analyse_file
    if jobs == 1 and progress is not None:
        worker = functools.partial(analyse_file, tick=_ticker(progress))
    for item in batch.run([str(p) for p in paths], worker, opt, with_figures, jobs, cache,
                          keep=kept):
        result = item.result
        if not isinstance(result, Analysed | Skipped | Several):
            raise AnalysisError(f"{item.path}: the analysis returned {type(result).__name__}")
        for part in each(result):
            (skipped if isinstance(part, Skipped) else done).append(part)  # type: ignore[arg-type]
        _advance(progress, result, item.cached)
    return gather(done, skipped, opt, with_figures, started, progress)


def cache_files(
    paths: Sequence[str | os.PathLike[str]], options: AnalysisOptions | None, with_figures: bool,
    jobs: int, cache: Path,
) -> tuple[int, list[Skipped]]:
    """Analyse into ``cache`` only (one array task of ``analyze --backend``): how many traces
    have results there, and the skipped ones."""
    opt = options or AnalysisOptions()
    analysed, skipped = 0, []
    for item in batch.run([str(p) for p in paths], analyse_file, opt, with_figures, jobs, cache,
                          keep=kept):
        if isinstance(item.result, Skipped):
            skipped.append(item.result)
        elif isinstance(item.result, Several) and not kept(item.result):
            skipped.extend(p for p in item.result.parts if isinstance(p, Skipped))
        else:
            analysed += 1
    return analysed, skipped


def gather(done: list[Analysed], skipped: list[Skipped], opt: AnalysisOptions,
           with_figures: bool, started: float, progress: Reporter | None) -> Results:
    """The per-trace results in report order, with the figures and comparisons across them."""
    done.sort(key=lambda d: _order(d.analysis))
    skipped.sort(key=lambda k: k.path)
    across: tuple[Picture, ...] = ()
    across_omitted: tuple[str, ...] = ()
    if with_figures and done:
        if progress is not None:
            progress.step("figures across configurations")
        fs = figure_sets.across_figures(
            [(d.analysis, d.digest) for d in done if d.digest is not None])
        across, across_omitted = _pictures(fs.drawn), tuple(fs.omitted)
    if progress is not None and done:
        progress.step("studies across runs: " + ", ".join(registry.STUDIES))
    studies = registry.over_runs([d.analysis for d in done], opt, with_figures)
    return Results(tuple(done), tuple(skipped), opt, across, across_omitted, started,
                   with_figures, tuple(studies))


def all_tables(analyses: Sequence[TraceAnalysis], options: AnalysisOptions,
               studies: Sequence[StudyResult] = ()) -> list[tables.Table]:
    """Every table written as CSV: the variability study's, then each other study's."""
    return [
        tables.model_table(analyses),
        tables.prediction_table(analyses),
        tables.apriori_table(analyses, runs=options.mc_runs, seed=options.seed),
        tables.scaling_table(analyses, "P"),
        tables.scaling_table(analyses, "n"),
        tables.variability_table(analyses),
        *(t for r in studies for t in r.tables),
    ]


SECTIONS = (
    ("distributions", "Distributions of Tₚᵏ"),
    ("ks", "Kolmogorov–Smirnov tests between ranks"),
    ("nodes", "Within- and between-node variance"),
    ("fits", "Bulk distribution fits"),
    ("models", "Stationary and non-stationary models, bounds"),
    ("montecarlo", "Johnson S_U Monte Carlo"),
)
"""The per-configuration sections, in the paper's order."""


def section_of(key: str) -> str:
    """The section a figure belongs to, from its stable key."""
    k = key.lower()
    for words, section in (
        (("ks",), "ks"),
        (("node", "vs-rank", "scatter"), "nodes"),
        (("bulk", "fit-pdf", "fits-bulk"), "fits"),
        (("parameter", "jsu", "a_k", "s_k", "montecarlo", "monte-carlo"), "montecarlo"),
        (("uniform",), "models"),
    ):
        if any(w in k for w in words):
            return section
    return "distributions"


def _img(p: Picture) -> dict[str, str]:
    return {"key": p.key, "title": p.title, "caption": p.caption,
            "src": "data:image/png;base64," + base64.b64encode(p.png).decode("ascii")}


def omission_section(line: str) -> str:
    """The section a "figure left out" line belongs to (the first that it concerns)."""
    for words, section in (
        (("uniform-fit", "uniform fit"), "models"),
        (("aₖ", "sₖ", "a_k", "s_k", "Johnson"), "montecarlo"),
        (("KS",), "ks"),
        (("scatter", "node"), "nodes"),
        (("bulk", "fitted pdf"), "fits"),
    ):
        if any(w in line for w in words):
            return section
    return "distributions"


def _finding_row(f: findings.Finding) -> dict[str, Any]:
    best = f.best
    if f.within_pct is not None:
        nodes = f"{f.within_pct:.0f} % within / {100 - f.within_pct:.0f} % between"
    else:
        nodes = f.nodes_why
    return {
        "anchor": f.anchor, "problem": f.problem, "solver": f.ksp, "n": findings.fmt_n(f.n),
        "P": f.nprocs, "N": f"{f.count:g}", "rep": f.repetition,
        "noise": "" if f.noise == "none" else f.noise,
        "reps": f.repetitions, "file": f.file,
        "measured": findings.fmt_time(f.measured),
        "best": "no model" if best is None else best.name,
        "best_error": "" if best is None else findings.fmt_pct(best.error_pct),
        "best_far": best is not None and abs(best.error_pct or 0) > findings.FAR,
        "ks": f.ks_why if f.ks_rejected_pct is None else f"{f.ks_rejected_pct:.0f} %",
        "ks_missing": f.ks_rejected_pct is None,
        "nodes": nodes, "nodes_missing": f.within_pct is None,
        "flags": flag_summary(f.flags),
    }


def _short_subject(subject: str) -> str:
    return re.sub(r"^stationary model \((.*)\)$", r"\1", subject)


def flag_summary(flags: Sequence[Flag]) -> list[dict[str, Any]]:
    """The findings table's view of a run's flags: one line per code naming what is flagged
    (far predictions with their signed error), the full reasons one click away."""
    grouped: dict[str, list[Flag]] = {"prediction-far": []}  # the far predictions first
    for fl in flags:
        grouped.setdefault(fl.code, []).append(fl)
    out = []
    for code, members in grouped.items():
        if not members:
            continue
        names = []
        for fl in members:
            name = _short_subject(fl.subject)
            pct = re.search(r"\(([+\-\u2212]\d[\d.,]*\s?%)\)", fl.message)
            if code == "prediction-far" and pct:
                name += " " + pct.group(1).replace("-", "\u2212")
            if name not in names:
                names.append(name)
        out.append({"code": code, "subject": ", ".join(names),
                    "messages": [f"{fl.subject}: {fl.message}" for fl in members]})
    return out


def _section(d: Analysed, f: findings.Finding, options: AnalysisOptions) -> dict[str, Any]:
    a = d.analysis
    by_section: dict[str, list[dict[str, str]]] = {s: [] for s, _ in SECTIONS}
    for p in d.pictures:
        by_section[section_of(p.key)].append(_img(p))
    tables_of: dict[str, list[tables.Table]] = {
        "distributions": [],
        "ks": [tables.ks_table(a)],
        "nodes": [tables.node_table(a)],
        "fits": [tables.fit_table(a)],
        "models": [tables.models_table(a)],
        "montecarlo": [tables.jsu_table(a)],
    }
    parts: list[dict[str, Any]] = []
    for key, title in SECTIONS:
        omitted = [o for o in d.omitted if omission_section(o) == key]
        parts.append({
            "id": f"{f.anchor}-{key}", "title": title, "figures": by_section[key],
            "tables": [{"title": t.title, "html": t.to_html(), "notes": t.notes,
                        "empty": t.empty} for t in tables_of[key]],
            "omitted": omitted,
        })
    sim = a.simulation
    if sim is not None:
        mc = (f"Monte Carlo: {sim.runs} runs of K = {sim.iterations} iterations on "
              f"N = {sim.count} units (seed {sim.seed}); mean {findings.fmt_time(a.simulated)}"
              + (f" ± {findings.fmt_time(a.simulated_stderr)} (standard error)"
                 if a.simulated_stderr is not None else " (one run: no standard error)")
              + f" against KSPSolve {findings.fmt_time(a.measured)} "
              f"({findings.fmt_pct(findings.error_pct(a.simulated, a.measured))}).")
    else:
        mc = f"No Monte Carlo: {findings._montecarlo_why(a)}."
    parts[-1]["lead"] = mc
    parts[1]["lead"] = findings.ks_alpha_note(options.alpha, options.reference_rank)
    if a.count <= 1.0:
        parts[4]["lead"] = ("N = 1 independent unit (one node): every stationary model collapses "
                            "to K·mean and the bounds to K·μ.")
    measured = [
        ("KSPSolve (slowest rank, PETSc's event log)", findings.fmt_time(a.measured)),
        ("Σₖ maxₚ Tₚᵏ (measured over the kept iterations)", findings.fmt_time(a.lockstep_sum)),
        ("maxₚ Σₖ Tₚᵏ (measured over the kept iterations)", findings.fmt_time(a.rank_sum_max)),
        ("iterations K recorded / kept for bulk statistics", f"{a.iterations} / {a.kept}"),
        ("ranks P, nodes, N in the maximum", f"{a.nprocs}, {a.n_nodes}, {a.count:g}"),
        *_noise_lines(a),
        ("file", a.path or "in memory"),
    ]
    notes = list(a.notes)
    return {"anchor": f.anchor, "name": f.config, "file": f.file, "measured": measured,
            "flags": [{"subject": fl.subject, "message": fl.message, "code": fl.code}
                      for fl in sorted(a.flags, key=lambda fl: fl.code != "prediction-far")],
            "notes": notes, "parts": parts}


def _noise_lines(a: TraceAnalysis) -> list[tuple[str, str]]:
    inj = a.injection
    if inj is None or not inj.spec.active:
        return []
    return [
        ("injected noise", inj.spec.text()),
        ("injected per rank and iteration (mean) / most into one rank's solve",
         f"{findings.fmt_time(inj.injected_mean)} / {findings.fmt_time(inj.injected_rank_max)}"),
        ("natural iteration time (Tₚᵏ minus the detours, mean)",
         findings.fmt_time(inj.natural_mean)),
    ]


def _anchors(analysed: Sequence[Analysed]) -> list[findings.Finding]:
    counts: dict[tuple[str, ...], int] = {}
    for d in analysed:
        counts[config_key(d.analysis)] = counts.get(config_key(d.analysis), 0) + 1
    seen: dict[tuple[str, ...], int] = {}
    rows = []
    for i, d in enumerate(analysed):
        key = config_key(d.analysis)
        seen[key] = seen.get(key, 0) + 1
        rows.append(findings.finding(d.analysis, f"run-{i + 1}", seen[key], counts[key]))
    return rows




def render_html(results: Results, table_list: Sequence[tables.Table],
                metadata: dict[str, Any], links: Sequence[tuple[str, str]] = ()) -> str:
    """The whole report as one HTML string; ``links``: pages beside it (address, title)."""
    rows = _anchors(results.analysed)
    opt = results.options
    across_tables = [t for t in table_list if t.name in ("table1_models", "apriori",
                                                         "scaling_nprocs", "scaling_n")]
    return ENV.get_template("report.html.j2").render(
        metadata=metadata,
        findings=[_finding_row(f) for f in rows],
        sentences=findings.sentences(rows),
        sections=[_section(d, f, opt) for d, f in zip(results.analysed, rows, strict=True)],
        section_titles=SECTIONS,
        skipped=results.skipped,
        across_tables=[{"title": t.title, "html": t.to_html(), "notes": t.notes,
                        "empty": t.empty, "csv": f"{t.name}.csv"} for t in across_tables],
        across_figures=[_img(p) for p in results.across],
        across_omitted=results.across_omitted,
        ks_note=findings.ks_alpha_note(opt.alpha, opt.reference_rank),
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


def summary(results: Results, table_list: Sequence[tables.Table],
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
                keep.add(batch.entry_name(p, opt, with_figures))
            except OSError:
                continue
        batch.prune(cache, keep)
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
