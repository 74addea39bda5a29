"""Log time axes make no tick beyond the view, and draw the same pixels as matplotlib's own
locator."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.ticker import LogLocator

from ksptrace.studies import drawing
from ksptrace.studies.variability.pages.figures import axes as time_axes


def _figure(limits: tuple[float, float], which: str) -> tuple[bytes, int]:
    """A log time axis over ``limits`` (s): its PNG and the ticks matplotlib made."""
    fig = drawing._figure(height=2.5)
    ax = fig.add_subplot()
    x = np.geomspace(*limits, 50)
    ax.plot(x, x, marker="o") if which == "x" else ax.plot(x, x)
    time_axes.log_time_ticks(ax, which)
    (ax.set_xlim if which == "x" else ax.set_ylim)(*limits)
    png = drawing.to_png(fig)
    axis = ax.xaxis if which == "x" else ax.yaxis
    return png, len(axis.majorTicks) + len(axis.minorTicks)


@pytest.mark.parametrize("limits", [(2e-9, 7.6e-6), (1e-6, 1e-3), (3e-4, 5e-4), (1e-7, 1e2)])
@pytest.mark.parametrize("which", ["x", "y"])
def test_the_pixels_are_matplotlibs_with_fewer_ticks(
        limits: tuple[float, float], which: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ours, made = _figure(limits, which)
    monkeypatch.setattr(time_axes, "_in_view", lambda locator: locator)
    theirs, made_by_matplotlib = _figure(limits, which)
    assert ours == theirs
    assert made <= made_by_matplotlib
    if limits == (2e-9, 7.6e-6):
        assert made < made_by_matplotlib  # a decade either side was made for nothing


def test_the_locator_keeps_only_the_view_and_leaves_other_locators_alone() -> None:
    fig = drawing._figure(height=2.5)
    ax = fig.add_subplot()
    time_axes.log_time_ticks(ax)
    ax.set_xlim(2e-6, 3e-3)
    locs = ax.xaxis.get_major_locator()()
    assert list(locs) == pytest.approx([1e-5, 1e-4, 1e-3])
    assert isinstance(ax.xaxis.get_minor_locator(), time_axes.InView)
    mine = LogLocator(subs=(1.0, 3.0))

    class Own(LogLocator):
        pass

    own = Own()
    assert time_axes._in_view(own) is own
    assert isinstance(time_axes._in_view(mine), time_axes.InView)
