"""Figures into Drawn records: drawn at once, or later in worker processes (the figures across
runs, drawn after every trace, issue 35). Agg only, no pyplot."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from typing import Any

from matplotlib.figure import Figure

from ksptrace.errors import AnalysisError
from ksptrace.studies import drawing
from ksptrace.studies.variability.digest import Drawn, FigureSet


def _why(exc: AnalysisError) -> str:
    """The reason of an error, without its advice to the caller."""
    return str(exc).split(";")[0]


def _render(make: Callable[[], Figure]) -> bytes | str:
    """PNG bytes of the figure ``make`` draws, or why it cannot be drawn (in a worker)."""
    try:
        fig = make()
    except AnalysisError as exc:
        return _why(exc)
    png = drawing.to_png(fig)
    fig.clear()
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
        fig.clear()

    def later(self, key: str, title: str, caption: str, make: Callable[[], Figure]) -> None:
        self._pending.append((len(self.drawn), self._what, make))
        self.drawn.append(Drawn(key, title, caption, b""))

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
            with ProcessPoolExecutor(max_workers=min(jobs, len(makers)),
                                     mp_context=get_context("fork")) as pool:
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
