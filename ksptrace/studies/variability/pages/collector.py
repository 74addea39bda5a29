"""Figures into Drawn records: drawn at once, in a forked process beside the rest (one large
trace's figures), or later in worker processes (the figures across runs, drawn after every
trace); issue 35. Agg only, no pyplot."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from matplotlib.figure import Figure

from ksptrace.errors import AnalysisError
from ksptrace.studies import drawing
from ksptrace.studies.variability.pages.digest import Drawn, FigureSet
from ksptrace.studies.workers import forked_pool, start_pool, stop


def _why(exc: AnalysisError) -> str:
    """The reason of an error, without its advice to the caller."""
    return str(exc).split(";")[0]


FORK_ELEMENTS = 4_000_000
"""A trace with at least this many iteration times draws part of its figures in a forked
process: at paper scale (41 M values) each half is about 2 s of histograms and matplotlib."""

_FILL: Callable[[Collector], None] | None = None
"""What the forked process draws; a global, so that nothing large is pickled to it."""


def _fill_forked() -> tuple[list[Drawn], list[str]]:
    """In the forked process: draw ``_FILL``'s figures, return them and the omitted lines."""
    assert _FILL is not None
    sub = Collector()
    _FILL(sub)
    if sub._pending:
        raise AnalysisError("a figure drawn in a forked process cannot be drawn later")
    return sub.drawn, sub.omitted


def can_fork(elements: int) -> bool:
    """Whether figures of a trace this large are drawn partly in a forked process: two cores
    or more, and not in a worker process (of ``analyze --jobs N``: the other workers have the
    cores; a daemonic worker cannot fork at all)."""
    return (elements >= FORK_ELEMENTS and (os.cpu_count() or 1) > 1
            and multiprocessing.parent_process() is None  # not a worker of analyze --jobs
            and "fork" in multiprocessing.get_all_start_methods())


def _render(make: Callable[[], Figure]) -> bytes | str:
    """PNG bytes of the figure ``make`` draws, or why it cannot be drawn (in a worker)."""
    try:
        fig = make()
    except AnalysisError as exc:
        return _why(exc)
    png = drawing.to_png(fig)
    drawing.release(fig)
    return png


class Collector:
    """Draws figures into Drawn records and closes nothing it does not need (Agg, no pyplot).

    ``later`` figures are drawn when the result is taken, in ``jobs`` processes: each is a
    picklable call that builds its figure (the figures across runs, drawn after every trace)."""

    def __init__(self) -> None:
        self.drawn: list[Drawn] = []
        self.omitted: list[str] = []
        self._pending: list[tuple[int, str, Callable[[], Figure]]] = []
        self._what = ""

    def add(self, key: str, title: str, caption: str, fig: Figure) -> None:
        self.drawn.append(Drawn(key, title, caption, drawing.to_png(fig)))
        drawing.release(fig)

    def later(self, key: str, title: str, caption: str, make: Callable[[], Figure]) -> None:
        self._pending.append((len(self.drawn), self._what, make))
        self.drawn.append(Drawn(key, title, caption, b""))

    def beside(self, fill: Callable[[Collector], None]) -> Beside:
        """Start ``fill`` (which adds figures to the Collector it is given) in a forked process,
        while this one goes on. ``join()`` waits for it and puts its figures and omitted lines
        where they would have been had ``fill(self)`` run now (the same report); ``stop()``
        abandons it (an error or Ctrl-C in this process)."""
        global _FILL
        pool = start_pool(1)
        _FILL = fill
        try:
            future: Future[tuple[list[Drawn], list[str]]] = pool.submit(_fill_forked)
        finally:
            _FILL = None
        return Beside(self, pool, future, len(self.drawn), len(self.omitted))

    def guarded(self, what: str, step: Callable[..., None], *args: Any) -> None:
        """Run one drawing step; a figure it cannot draw becomes an omitted line."""
        self._what = what
        try:
            step(*args)
        except AnalysisError as exc:
            self.omitted.append(f"{what}: not drawn, {_why(exc)}")

    def result(self, jobs: int = 1) -> FigureSet:
        makers = [make for _, _, make in self._pending]
        if jobs > 1 and len(makers) > 1:
            with forked_pool(min(jobs, len(makers))) as pool:
                pngs = list(pool.map(_render, makers))
        else:
            pngs = [_render(make) for make in makers]
        failed = set()
        for (index, what, _), png in zip(self._pending, pngs, strict=True):
            if isinstance(png, str):
                failed.add(index)
                self.omitted.append(f"{what}: not drawn, {png}")
            else:
                self.drawn[index] = replace(self.drawn[index], png=png)
        self._pending = []
        drawn = tuple(d for i, d in enumerate(self.drawn) if i not in failed)
        return FigureSet(drawn, tuple(self.omitted))


class Beside:
    """Figures being drawn in a forked process for a Collector (:meth:`Collector.beside`)."""

    def __init__(self, out: Collector, pool: ProcessPoolExecutor,
                 future: Future[tuple[list[Drawn], list[str]]], at_drawn: int,
                 at_omitted: int) -> None:
        self.out, self.pool, self.future = out, pool, future
        self.at_drawn, self.at_omitted = at_drawn, at_omitted

    def join(self) -> None:
        """Wait for the forked process; its figures and omitted lines go where they belong."""
        try:
            drawn, omitted = self.future.result()
        except BaseException:
            stop(self.pool)
            raise
        self.pool.shutdown(wait=True)
        out, at = self.out, self.at_drawn
        out.drawn[at:at] = drawn
        out.omitted[self.at_omitted:self.at_omitted] = omitted
        out._pending = [(i + len(drawn) if i >= at else i, what, make)
                        for i, what, make in out._pending]

    def stop(self) -> None:
        """Abandon the forked process's figures (an error or Ctrl-C here)."""
        stop(self.pool)
