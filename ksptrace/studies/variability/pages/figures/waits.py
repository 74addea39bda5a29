"""The figure of a run's waits: a rank x iteration heat map of the time each rank spent inside
MPI reductions in each iteration (``wait_seconds``)."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ksptrace.studies.drawing import _figure
from ksptrace.studies.variability.pages.figures.axes import MAX_IMAGE_ROWS, unit_for


def _block_max(x: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, int, int]:
    """``x`` reduced to at most ``rows`` x ``cols`` cells, each the largest of its block (a
    wait is a spike: a mean would hide it)."""
    fr, fc = max(1, -(-x.shape[0] // rows)), max(1, -(-x.shape[1] // cols))
    pad_r, pad_c = -x.shape[0] % fr, -x.shape[1] % fc
    padded = np.pad(x, ((0, pad_r), (0, pad_c)), constant_values=0.0)
    out = padded.reshape(padded.shape[0] // fr, fr, padded.shape[1] // fc, fc).max(axis=(1, 3))
    return out, fr, fc


def wait_map(waits: np.ndarray) -> Figure:
    """Heat map of ``waits`` [P, K] (seconds): ranks on x, iterations k = 1..K on y, colours
    from 0 to the 99th percentile (clipped above), block maxima over large traces."""
    x = np.asarray(waits, dtype=np.float64)
    img, fr, fc = _block_max(x.T, MAX_IMAGE_ROWS, MAX_IMAGE_ROWS)
    hi = float(np.percentile(x, 99)) or float(x.max()) or 1e-9
    scale, unit = unit_for(hi)
    fig = _figure(height=4.0)
    ax = fig.add_subplot()
    mesh = ax.imshow(img / scale, aspect="auto", origin="lower", cmap="viridis",
                     norm=Normalize(0.0, hi / scale), interpolation="nearest",
                     extent=(-0.5, img.shape[1] - 0.5, -0.5, img.shape[0] - 0.5))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda c, _pos=None: str(round(c) * fc)))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda r, _pos=None: str(round(r) * fr + 1)))
    ax.set_xlabel("rank $p$")
    ax.set_ylabel("iteration $k$")
    fig.colorbar(mesh, ax=ax, label=f"wait in MPI reductions ({unit}), clipped", extend="max")
    return fig
