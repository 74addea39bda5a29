"""Ticks a reader can read: at least ``MIN_TICKS`` labelled ticks inside the data's range on a
logarithmic axis, however narrow the range.

matplotlib's log locator labels decades only, so an axis over 2 to 5 s gets no label at all,
and one over 60 µs to 400 µs a single "100 µs". :class:`Readable` keeps matplotlib's ticks
when at least three fall in view, and otherwise takes, in turn, 1-3 per decade, 1-2-5 per
decade, and round values evenly spaced over the view (2 s, 3 s, 4 s, 5 s).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.ticker import Locator, MaxNLocator

MIN_TICKS = 3
"""Labelled ticks every axis shows within its data's range."""
SUBS = ((1.0, 3.0), (1.0, 2.0, 5.0))
"""Tick positions per decade tried, in turn, when the decades alone give too few."""
SLACK = 1e-9
"""Relative margin at the ends of the view (a tick exactly at an end is in view)."""


def in_view(locs: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return locs[(locs >= lo * (1 - SLACK)) & (locs <= hi * (1 + SLACK))]


def per_decade(lo: float, hi: float, subs: tuple[float, ...]) -> np.ndarray:
    """``subs`` times every power of ten from below ``lo`` to above ``hi``, in view."""
    first, last = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    locs = np.array([s * 10.0**e for e in range(first, last + 1) for s in subs])
    return in_view(locs, lo, hi)


def readable_ticks(lo: float, hi: float) -> np.ndarray:
    """At least ``MIN_TICKS`` round values within [lo, hi] (0 < lo < hi)."""
    for subs in SUBS:
        locs = per_decade(lo, hi, subs)
        if locs.size >= MIN_TICKS:
            return locs
    for bins in (4, 6, 9):
        locs = in_view(np.asarray(MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10])
                                  .tick_values(lo, hi)), lo, hi)
        locs = locs[locs > 0]
        if locs.size >= MIN_TICKS:
            return locs
    return np.geomspace(lo, hi, MIN_TICKS)


class Readable(Locator):
    """A log axis's major locator: ``inner``'s ticks when at least three are in view, else
    :func:`readable_ticks` over the view."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def set_axis(self, axis: Any) -> None:
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def __call__(self) -> Any:
        locs = np.asarray(self.inner())
        if self.axis is None:
            return locs
        lo, hi = sorted(self.axis.get_view_interval())
        if lo <= 0 or not np.isfinite(hi) or in_view(locs, lo, hi).size >= MIN_TICKS:
            return locs
        return readable_ticks(lo, hi)

    def tick_values(self, vmin: float, vmax: float) -> Any:
        return self.inner.tick_values(vmin, vmax)

    def nonsingular(self, vmin: float, vmax: float) -> Any:
        return self.inner.nonsingular(vmin, vmax)

    def view_limits(self, vmin: float, vmax: float) -> Any:
        return self.inner.view_limits(vmin, vmax)
