"""A blank figure of the report's width and its PNG bytes: what every study draws on.

Shared by all studies (a declared shared module: see docs/architecture.md). Figures are drawn on
matplotlib's object API with the Agg canvas, never pyplot, so no global state is touched.
"""

from __future__ import annotations

import io
import threading

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, Formatter, FuncFormatter
from PIL import Image
from PIL.PngImagePlugin import PngInfo

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


def _short(value: str, limit: int) -> str:
    lines = value.split("\n")
    if len(value) <= limit and len(lines) <= 6:
        return value
    return "\n".join(ln if len(ln) <= limit else ln[:limit - 1] + "…" for ln in lines[:6])


def _texts(fig: Figure) -> list[Text]:
    """Every text of ``fig`` but the tick labels, found without asking an axis for its ticks
    (which makes matplotlib create them: two thirds of the report's drawing time, issue 35)."""
    found: list[Text] = []
    for artist in fig.get_children():
        if isinstance(artist, Axes):
            for child in artist.get_children():
                if isinstance(child, Axis):
                    found += [child.label, child.offsetText]
                else:
                    found += child.findobj(Text)
        else:
            found += artist.findobj(Text)
    return found


def bound_texts(fig: Figure, limit: int = MAX_TEXT) -> None:
    """Cut every text of ``fig`` (titles, labels, legend entries, annotations, tick labels set as
    strings) to ``limit`` characters per line and 6 lines."""
    for text in _texts(fig):
        value = text.get_text()
        short = _short(value, limit)
        if short != value:
            text.set_text(short)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
                _bound_labels(formatter, limit)


def _bound_labels(formatter: Formatter, limit: int) -> None:
    """Tick labels given as strings live in a FixedFormatter, or (after ``set_ticks(...,
    labels=...)``) in a FuncFormatter; the axis writes them into its ticks at draw time."""
    if isinstance(formatter, FixedFormatter):
        formatter.seq = [_short(str(v), limit) for v in formatter.seq]
    elif isinstance(formatter, FuncFormatter) and not getattr(formatter, "_bounded", False):
        func = formatter.func
        formatter.func = lambda x, pos=None: _short(str(func(x, pos)), limit)
        formatter._bounded = True


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes (its texts bounded: :func:`bound_texts`).

    A figure of this module (``DPI``, an Agg canvas) is drawn once and its pixels encoded:
    ``savefig`` would draw it twice, once to lay it out and once to render, for the same
    pixels (``tests/studies/test_drawing.py``) in a fifth more time (issue 35). An opaque
    figure (every figure of the report) is written as RGB: the same pixels, a tenth smaller and
    encoded in two thirds of the time; one with any transparency keeps its alpha channel."""
    bound_texts(fig)
    buf = io.BytesIO()
    canvas = fig.canvas
    if fig.dpi != DPI or not isinstance(canvas, FigureCanvasAgg):
        fig.savefig(buf, format="png", dpi=DPI)
        return buf.getvalue()
    _share_renderer(canvas)
    canvas.draw()
    width, height = canvas.get_width_height()
    rgba = canvas.buffer_rgba()
    image = Image.frombuffer("RGBA", (width, height), rgba, "raw", "RGBA", 0, 1)
    if np.frombuffer(rgba, dtype=np.uint8)[3::4].min() == 255:  # every alpha opaque (PIL's
        # getextrema measures all four bands: 3 ms a figure, this 0.2 ms)
        image = image.convert("RGB")
    info = PngInfo()
    info.add_text("Software", f"Matplotlib version{matplotlib.__version__}, https://matplotlib.org/")
    image.save(buf, format="png", dpi=(DPI, DPI), pnginfo=info)
    return buf.getvalue()


_SHARED = threading.local()
"""Per thread, one Agg renderer per figure size (``renderers``), drawn into by every figure of
that size in turn: a renderer is never drawn into by two threads at once."""


def _share_renderer(canvas: FigureCanvasAgg) -> None:
    """Give ``canvas`` this thread's renderer for its size. matplotlib caches the measured
    extent of each text per renderer; a new renderer per figure measured the same tick labels
    and axis titles again for every figure (its constrained layout asks for them several times):
    a twentieth of a demo analysis with figures. The renderer is cleared before each draw: the
    same pixels (tests/studies/test_drawing.py)."""
    width, height = canvas.figure.bbox.size
    key = (float(width), float(height), float(canvas.figure.dpi))
    renderers: dict[tuple[float, float, float], RendererAgg] = _SHARED.__dict__.setdefault(
        "renderers", {})
    renderer = renderers.get(key)
    if renderer is None:
        renderer = renderers[key] = RendererAgg(width, height, canvas.figure.dpi)
    canvas.renderer = renderer
    canvas._lastKey = key  # FigureCanvasAgg.get_renderer reuses the renderer of this key


def release(fig: Figure) -> None:
    """Let a drawn figure go of its renderer: a renderer of its own (width x height x 4 bytes,
    from ``savefig``) is freed now, the shared one of :func:`to_png` stays for the next figure;
    the rest goes with the garbage collector. ``fig.clear()`` took a tenth of a demo analysis'
    time with figures for this, because clearing an Axes rebuilds its ticks and spines."""
    canvas = fig.canvas
    if isinstance(canvas, FigureCanvasAgg) and hasattr(canvas, "renderer"):
        del canvas.renderer
        canvas._lastKey = None  # a later draw makes a new renderer rather than reuse none

