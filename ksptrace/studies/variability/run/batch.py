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


RESULTS_FORMAT = 7
"""The layout of a cached result: raised whenever TraceAnalysis or what it holds gains or loses
a field (2: the waiting penalties and spreads; 3: the variance split; 4: a noise spec's ranks= as
intervals; 5: set-up apart, issue 52; 6: the study's modules moved into subpackages, so the class
paths changed; 7: the wait heat map of a trace with wait times, issue 65), so no entry of an
older layout is read back."""


def options_key(options: AnalysisOptions, with_figures: bool) -> str:
    """A hash of everything besides the trace that changes its results."""
    text = f"{__version__}|{RESULTS_FORMAT}|{options!r}|figures={with_figures}"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def entry_name(path: str | os.PathLike[str], options: AnalysisOptions,
               with_figures: bool) -> str:
    """The name of ``path``'s entry (TraceError for a FIFO, a device, a folder; OSError when
    it cannot be opened)."""
    return f"{sealed.content_key(path)}-{options_key(options, with_figures)}{sealed.SUFFIX}"


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
    todo: list[tuple[str, str | None]] = []
    for path in paths:
        name = None
        if opened is not None:
            try:
                name = entry_name(path, options, with_figures)
            except (OSError, KsptraceError):
                name = None  # unreadable, not a file: the worker names the problem
        if name is not None and opened is not None:
            hit = _load(opened, name, path)
            if hit is not None:
                yield Done(path, hit, True)
                continue
        todo.append((path, name))
    if jobs == 1 or len(todo) <= 1:
        with reading([path for path, _ in todo]):  # one reader child for the small files,
            # not a fork each; it reads the next file while this one is analysed
            for path, name in todo:
                done = Done(path, worker(path, options, with_figures), False)
                if opened is not None and name is not None and keep(done.result):
                    sealed.store(opened, name, done)
                yield done
        return
    with forked_pool(min(jobs, len(todo)), keep_reading) as pool:  # Ctrl-C: workers stopped
        pending: dict[Future[object], tuple[str, str | None]] = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < 2 * jobs:  # a few in flight, not every trace
                path, name = queue.pop(0)
                pending[pool.submit(_work, (worker, path, options, with_figures))] = (
                    path, name)
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                path, name = pending.pop(future)
                done = Done(path, future.result(), False)
                if opened is not None and name is not None and keep(done.result):
                    sealed.store(opened, name, done)
                yield done


def prune(cache: Path, keep: set[str]) -> None:
    """Remove entries of traces no longer analysed (and stray temporary files)."""
    sealed.prune(cache, keep)
