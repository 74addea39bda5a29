"""Analysing many trace files: in one process or N, each trace's results kept in a cache.

Each trace is read, analysed and drawn on its own, and only its results (an ``Analysed``: the
numbers, the figures as PNG, no timings) are kept, so peak memory is set by the largest trace
(times the number of processes), not by the number of traces. With ``jobs > 1`` the traces are
shared among that many processes; every trace's analysis is seeded by the options alone, so the
results do not depend on the number of processes or on the order.

The results of a trace are stored in the cache folder under a name made of the trace's content
hash and a hash of everything that changes them (the analysis options, whether figures are
drawn, the ksptrace version). A rerun after new traces arrive analyses only the new ones, and a
run killed half-way keeps what it finished. Each entry is written to a temporary name and
renamed, so an entry is whole or absent; an entry that cannot be read (truncated, from another
Python) is analysed again, never trusted. The cache is used only in a folder no one else can
write, and each entry is sealed with this user's key (:mod:`.sealed`): nothing another user
could have written is ever unpickled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

from ksptrace.errors import KsptraceError
from ksptrace.studies.variability.run import sealed
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.workers import forked_pool
from ksptrace.trace.reader_child import keep_reading, reading
from ksptrace.version import __version__


@dataclass(frozen=True)
class Done:
    """What one trace gave: results or the reason it was skipped (``report.Analysed`` or
    ``report.Skipped``), and whether it came from the cache."""

    path: str
    result: object
    cached: bool


RESULTS_FORMAT = 9
"""The layout of a cached result: raised whenever TraceAnalysis or what it holds gains or loses
a field, or the fitting engine's results change (2: the waiting penalties and spreads; 3: the
variance split; 4: a noise spec's ranks= as intervals; 5: set-up apart, issue 52; 6: the study's
modules moved into subpackages, so the class paths changed; 7: issue 61's engine, the tie rule,
nct's coordinates and a fit's limit; 8: the wait heat map of a trace with wait times, issue 65,
and the drift and modes of the variance split, issue 63; 9: the held-out-half checks and the
bulk-plus-detours model, ``tails``, issue 63), so no entry of an older layout is read back."""


def options_key(options: AnalysisOptions, with_figures: bool) -> str:
    """A hash of everything besides the trace that changes its results."""
    text = f"{__version__}|{RESULTS_FORMAT}|{options!r}|figures={with_figures}"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class FromFile:
    """What a worker gives: its result, and the source of the trace it read
    (:attr:`ksptrace.trace.model.Trace.source`; None when it read none, or not whole)."""

    result: object
    source: tuple[int, ...] | None


def entry_name(path: str | os.PathLike[str], options: AnalysisOptions,
               with_figures: bool) -> str:
    """The name of ``path``'s entry (TraceError for a FIFO, a device, a folder; OSError when
    it cannot be opened)."""
    return _entry(path, options, with_figures)[0]


def _entry(path: str | os.PathLike[str], options: AnalysisOptions,
           with_figures: bool) -> tuple[str, tuple[int, ...] | None]:
    key, source = sealed.fingerprint(path)
    return f"{key}-{options_key(options, with_figures)}{sealed.SUFFIX}", source


def cache_problem(folder: Path) -> str | None:
    """Why the cache in ``folder`` may not be used (None when it may)."""
    opened = sealed.open_cache(folder)
    return opened if isinstance(opened, str) else None


def _load(cache: sealed.Cache, name: str, path: str) -> object | None:
    done = sealed.load(cache, name)
    if not isinstance(done, Done):
        return None
    return _with_path(done.result, path)


def _with_path(result: object, path: str) -> object:
    """The cached results of identical bytes under another name carry the new name (a
    trace of several solves: each part, as ``<path>#solve=...``)."""
    parts = getattr(result, "parts", None)
    if parts is not None:
        renamed = tuple(_with_path(part, path + "#" + str(getattr(getattr(part, "analysis",
                        part), "path", "")).partition("#")[2]) for part in parts)
        return dataclasses.replace(result, path=path, parts=renamed)  # type: ignore[type-var]
    analysis = getattr(result, "analysis", None)
    if analysis is not None and getattr(analysis, "path", path) != path:
        return dataclasses.replace(result,  # type: ignore[type-var]
                                   analysis=dataclasses.replace(analysis, path=path))
    return result


Worker = Callable[[str, AnalysisOptions, bool], object]
"""Analyses one trace file; its results are cached only when it returns a :class:`FromFile`
whose source is the file hashed."""

Todo = tuple[str, str | None, tuple[int, ...] | None]
"""A trace to analyse: its path, its entry's name and the source hashed (None: not cached)."""


def _finish(path: str, raw: object, todo: Todo, opened: sealed.Cache | None,
            keep: Callable[[object], bool]) -> Done:
    """``Done`` of the worker's answer ``raw``, stored under the entry's name only when what
    the worker read is what was hashed (issue 66: a trace swapped between the hash and the
    read stored its results under the other trace's name)."""
    result, source = (raw.result, raw.source) if isinstance(raw, FromFile) else (raw, None)
    done = Done(path, result, False)
    _, name, hashed = todo
    if (opened is not None and name is not None and hashed is not None and source == hashed
            and keep(result)):
        sealed.store(opened, name, done)
    return done


def _work(job: tuple[Worker, str, AnalysisOptions, bool]) -> object:
    worker, path, options, with_figures = job
    return worker(path, options, with_figures)


def run(paths: Sequence[str], worker: Worker, options: AnalysisOptions, with_figures: bool,
        jobs: int = 1, cache: Path | None = None,
        keep: Callable[[object], bool] = lambda result: True,
        note: Callable[[str], None] | None = None) -> Iterator[Done]:
    """Yield each trace's ``Done`` as it completes: from the cache when there, else from
    ``worker(path, options, with_figures)`` (in ``jobs`` processes), stored in the cache when
    ``keep(result)`` (a skipped trace is not kept: its reason may be transient)."""
    if jobs < 1:
        raise KsptraceError(f"--jobs must be at least 1, got {jobs}")
    opened = None if cache is None else sealed.open_cache(cache)
    if isinstance(opened, str):
        if note is not None:
            note(f"ksptrace: note: the cache {cache} is not used: {opened}")
        opened = None
    todo: list[Todo] = []
    for path in paths:
        name, source = None, None
        if opened is not None:
            try:
                name, source = _entry(path, options, with_figures)
            except (OSError, KsptraceError):
                name = None  # unreadable, not a file: the worker names the problem
        if name is not None and opened is not None:
            hit = _load(opened, name, path)
            if hit is not None:
                yield Done(path, hit, True)
                continue
        todo.append((path, name, source))
    if jobs == 1 or len(todo) <= 1:
        with reading([path for path, _, _ in todo]):  # one reader child for the small files,
            # not a fork each; it reads the next file while this one is analysed
            for item in todo:
                yield _finish(item[0], worker(item[0], options, with_figures), item, opened,
                              keep)
        return
    with forked_pool(min(jobs, len(todo)), keep_reading) as pool:  # Ctrl-C: workers stopped
        pending: dict[Future[object], Todo] = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < 2 * jobs:  # a few in flight, not every trace
                item = queue.pop(0)
                pending[pool.submit(_work, (worker, item[0], options, with_figures))] = item
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                item = pending.pop(future)
                yield _finish(item[0], future.result(), item, opened, keep)


def prune(cache: Path, keep: set[str]) -> None:
    """Remove entries of traces no longer analysed (and stray temporary files)."""
    sealed.prune(cache, keep)
