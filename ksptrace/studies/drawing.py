"""A blank figure of the report's width and its PNG bytes: what every study draws on.

Shared by all studies (a declared shared module: see docs/architecture.md). Figures are drawn on
matplotlib's object API with the Agg canvas, never pyplot, so no global state is touched.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

WIDTH = 10.5
"""Figure width in inches: 1050 px at ``DPI``, the report's column."""
DPI = 100

__all__ = ["DPI", "WIDTH", "_figure", "to_png"]


def _figure(width: float = WIDTH, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


MAX_TEXT = 160
"""Characters of one text in a figure: a longer one (a trace's 5000-character method name)
overflows the rasteriser; it is cut, with an ellipsis, before drawing."""


def bound_texts(fig: Figure, limit: int = MAX_TEXT) -> None:
    """Cut every text of ``fig`` (titles, labels, legend entries, annotations) to ``limit``
    characters per line and 6 lines."""
    for text in fig.findobj(Text):
        value = text.get_text()
        lines = value.split("\n")
        if len(value) <= limit and len(lines) <= 6:
            continue
        short = [ln if len(ln) <= limit else ln[:limit - 1] + "…" for ln in lines[:6]]
        text.set_text("\n".join(short))


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes (its texts bounded: :func:`bound_texts`)."""
    bound_texts(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()
