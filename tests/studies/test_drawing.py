"""Figures to PNG: drawn once, the same pixels savefig gives."""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.figure import Figure
from PIL import Image

from ksptrace.studies import drawing


def _busy() -> Figure:
    fig = drawing._figure(height=4.0)
    left, right = fig.subplots(1, 2)
    x = np.logspace(-5, -3, 50)
    left.loglog(x, x**1.5, label="a line with a legend")
    left.set_xlabel("seconds (log)")
    left.legend()
    left.set_title("Tₚᵏ over ranks")
    image = right.imshow(np.arange(200.0).reshape(10, 20), aspect="auto")
    fig.colorbar(image, ax=right, label="µs")
    right.set_yticks([0, 5], labels=["first", "x" * 40])
    return fig


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def _savefig(fig: Figure) -> bytes:
    drawing.bound_texts(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=drawing.DPI)
    return buf.getvalue()


def test_a_figure_drawn_once_has_savefigs_pixels() -> None:
    png = drawing.to_png(_busy())
    reference = _savefig(_busy())
    assert png.startswith(b"\x89PNG")
    assert _pixels(png).shape == (400, 1050, 4)
    np.testing.assert_array_equal(_pixels(png), _pixels(reference))
    dpi = Image.open(io.BytesIO(png)).info["dpi"]
    assert dpi == pytest.approx((drawing.DPI, drawing.DPI), rel=1e-3)


def test_an_opaque_figure_is_rgb_and_a_transparent_one_keeps_its_alpha() -> None:
    assert Image.open(io.BytesIO(drawing.to_png(_busy()))).mode == "RGB"
    fig = _busy()
    fig.patch.set_alpha(0.0)
    png = drawing.to_png(fig)
    assert Image.open(io.BytesIO(png)).mode == "RGBA"
    reference = _savefig(_busy_transparent())
    np.testing.assert_array_equal(_pixels(png), _pixels(reference))


def _busy_transparent() -> Figure:
    fig = _busy()
    fig.patch.set_alpha(0.0)
    return fig


def test_a_figure_at_another_resolution_goes_through_savefig() -> None:
    fig = Figure(figsize=(2.0, 1.0), dpi=50)
    fig.subplots().plot([0, 1], [1, 0])
    assert _pixels(drawing.to_png(fig)).shape == (100, 200, 4)  # at DPI, as savefig writes


def test_a_released_figure_has_no_pixels_left_and_draws_the_same_again() -> None:
    fig = _busy()
    png = drawing.to_png(fig)
    assert hasattr(fig.canvas, "renderer")
    drawing.release(fig)
    assert not hasattr(fig.canvas, "renderer")  # the figure holds no renderer any more
    assert fig.axes  # nothing cleared: clearing an Axes rebuilds its ticks (the cost it saves)
    twin = _busy()  # drawn twice, never released: a second draw lays out once more
    assert _pixels(drawing.to_png(twin)).shape == _pixels(png).shape
    np.testing.assert_array_equal(_pixels(drawing.to_png(fig)), _pixels(drawing.to_png(twin)))


def test_figures_of_one_size_share_a_renderer_and_keep_their_own_pixels() -> None:
    first = drawing.to_png(_busy())
    other = drawing._figure(height=4.0)  # the same size, other contents
    other.add_subplot().plot([0, 1], [1, 0], label="another")
    between = drawing.to_png(other)
    again = _busy()
    assert drawing.to_png(again) == first  # the shared renderer is cleared before each draw
    assert between != first
    assert again.canvas.renderer is other.canvas.renderer  # one renderer for the size
    shorter = drawing._figure(height=2.0)
    drawing.to_png(shorter)
    assert shorter.canvas.renderer is not again.canvas.renderer
