"""The variability study over many traces: each trace read, analysed, drawn and dropped (never
pooled), in ``jobs`` processes with a per-trace cache; only results are kept.

``analyse`` and ``analyse_files`` are the only steps that see traces.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ksptrace.errors import AnalysisError, KsptraceError
from ksptrace.studies.result import Figure, StudyResult
from ksptrace.studies.variability.conclusions import findings
from ksptrace.studies.variability.pages.digest import Drawn, TraceDigest, digest_of
from ksptrace.studies.variability.run import batch
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace, ordered_kept
from ksptrace.studies.variability.stats.ordered import OrderedRows
from ksptrace.trace.model import CONFIG_DEFAULTS, CONFIG_KEYS, Trace
from ksptrace.trace.read import iter_traces
from ksptrace.trace.solves import split


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
class Analysed:
    """What is kept of one trace once it has been analysed and drawn: no raw timings."""

    analysis: TraceAnalysis
    pictures: tuple[Figure, ...] = ()
    omitted: tuple[str, ...] = ()
    digest: TraceDigest | None = None


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
    across: tuple[Figure, ...] = ()
    across_omitted: tuple[str, ...] = ()
    started: float = field(default_factory=time.time)
    with_figures: bool = True
    studies: tuple[StudyResult, ...] = ()
    """The other studies over the analysed runs, added by the report
    (:mod:`ksptrace.studies.registry`)."""


def _pictures(drawn: Iterable[Drawn]) -> tuple[Figure, ...]:
    return tuple(Figure(d.key, d.title, d.caption, d.png) for d in drawn)


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

    # each rank sorted once, when the analysis first needs it, for it and for the figures
    ordered = functools.cache(lambda: ordered_kept(trace, opt))
    try:
        return _analysed(trace, opt, with_figures, step, ordered)
    except AnalysisError as exc:
        return Skipped(name, str(exc))
    except (KsptraceError, ArithmeticError) as exc:  # one foreign trace never sinks the set
        return Skipped(name, f"{name}: its values defeat the analysis ({type(exc).__name__}: "
                             f"{str(exc)[:300]}); it is left out of the report")


def _analysed(trace: Trace, opt: AnalysisOptions, with_figures: bool,
              step: Callable[[str, float], None],
              ordered: Callable[[], OrderedRows | None]) -> Analysed:
    a = analyze_trace(trace, opt, step, ordered)
    pictures: tuple[Figure, ...] = ()
    omitted: tuple[str, ...] = ()
    digest = None
    if with_figures:
        from ksptrace.studies.variability.pages import figure_sets  # matplotlib: only to draw

        step("figures", 0.0)
        drawn = figure_sets.trace_figures(trace, a, ordered())
        pictures, omitted = _pictures(drawn.drawn), tuple(drawn.omitted)
        digest = digest_of(trace, a, ordered())
    return Analysed(a, pictures, omitted, digest)


RELEASE_BYTES = 64 << 20
"""A trace whose stamps take this much is collected right after its analysis (a full collection
costs about 70 ms once scipy and matplotlib are loaded: more than the analysis of a small trace
itself, issue 35)."""


def _size(item: Trace | KsptraceError) -> int:
    return int(item.stamps.nbytes) if isinstance(item, Trace) else 0


def _release(size: int) -> None:
    if size >= RELEASE_BYTES:
        gc.collect()


def analyse_file(path: str, opt: AnalysisOptions, with_figures: bool = True,
                 tick: Callable[[str, float], None] | None = None
                 ) -> Analysed | Skipped | Several:
    """Read, analyse and draw one trace file: the unit of work of ``analyse_files``.

    The trace is gone when this returns: the analysis and its figures leave reference cycles
    that hold the trace's arrays until the cyclic collector runs, which would otherwise keep
    one trace in memory while the next is read (1.75 GiB instead of 1.1 GiB at 8192 x 5000).
    """
    result = analyse_read(path, opt, with_figures, tick).result
    if not isinstance(result, Analysed | Skipped | Several):  # for mypy: analyse_one's types
        raise AnalysisError(f"{path}: the analysis returned {type(result).__name__}")
    return result


def analyse_read(path: str, opt: AnalysisOptions, with_figures: bool = True,
                 tick: Callable[[str, float], None] | None = None) -> batch.FromFile:
    """:func:`analyse_file`'s result, with the source of the trace it read (what the cache
    checks before it stores the result under the file's hash)."""
    result: Analysed | Skipped | Several | None = None
    source = None
    size = 0
    for item in iter_traces([path]):
        result = analyse_one(item, opt, with_figures, tick)
        size = _size(item)
        source = item.source if isinstance(item, Trace) else None
        del item
    _release(size)
    if result is None:  # iter_traces yields once per path
        raise AnalysisError(f"{path}: the reader gave nothing")
    return batch.FromFile(result, source)


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
        size = _size(item)
        del item  # only results are kept
        _release(size)  # and the cycles that still hold the trace (see analyse_file)
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
    worker: batch.Worker = analyse_read
    if jobs == 1 and progress is not None:
        worker = functools.partial(analyse_read, tick=_ticker(progress))
    for item in batch.run([str(p) for p in paths], worker, opt, with_figures, jobs, cache,
                          keep=kept, note=None if progress is None else progress.note):
        result = item.result
        if not isinstance(result, Analysed | Skipped | Several):
            raise AnalysisError(f"{item.path}: the analysis returned {type(result).__name__}")
        for part in each(result):
            (skipped if isinstance(part, Skipped) else done).append(part)  # type: ignore[arg-type]
        _advance(progress, result, item.cached)
    return gather(done, skipped, opt, with_figures, started, progress, jobs)


def cache_files(
    paths: Sequence[str | os.PathLike[str]], options: AnalysisOptions | None, with_figures: bool,
    jobs: int, cache: Path,
) -> tuple[int, list[Skipped]]:
    """Analyse into ``cache`` only (one array task of ``analyze --backend``): how many traces
    have results there, and the skipped ones."""
    opt = options or AnalysisOptions()
    analysed, skipped = 0, []
    for item in batch.run([str(p) for p in paths], analyse_read, opt, with_figures, jobs, cache,
                          keep=kept):
        if isinstance(item.result, Skipped):
            skipped.append(item.result)
        elif isinstance(item.result, Several) and not kept(item.result):
            skipped.extend(p for p in item.result.parts if isinstance(p, Skipped))
        else:
            analysed += 1
    return analysed, skipped


def gather(done: list[Analysed], skipped: list[Skipped], opt: AnalysisOptions,
           with_figures: bool, started: float, progress: Reporter | None,
           jobs: int = 1) -> Results:
    """The per-trace results in report order, with the figures and comparisons across them."""
    done.sort(key=lambda d: _order(d.analysis))
    skipped.sort(key=lambda k: k.path)
    across: tuple[Figure, ...] = ()
    across_omitted: tuple[str, ...] = ()
    if with_figures and done:
        from ksptrace.studies.variability.pages import across_sets  # matplotlib: only to draw

        if progress is not None:
            progress.step("figures across configurations")
        fs = across_sets.across_figures(
            [(d.analysis, d.digest) for d in done if d.digest is not None], jobs)
        across, across_omitted = _pictures(fs.drawn), tuple(fs.omitted)
    return Results(tuple(done), tuple(skipped), opt, across, across_omitted, started,
                   with_figures)
