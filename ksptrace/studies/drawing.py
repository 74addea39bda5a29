"""A blank figure of the report's width and its PNG bytes: what every study draws on.

Shared by all studies (a declared shared module: see docs/architecture.md). Figures are drawn on
matplotlib's object API with the Agg canvas, never pyplot, so no global state is touched.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

WIDTH = 10.5
"""Figure width in inches: 1050 px at ``DPI``, the report's column."""
DPI = 100

__all__ = ["DPI", "WIDTH", "_figure", "to_png"]


def _figure(width: float = WIDTH, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()
