"""What every figure of the variability study shares: time units, the time axis that keeps the
bulk in view (clipping a long tail at a stated quantile), histogram counts of large arrays,
and the thresholds behind these choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.pages.figures.ticks import Readable
from ksptrace.studies.variability.stats.ordered import OrderedRows
from ksptrace.trace.model import MIN_ITERATION_SECONDS

MAX_IMAGE_ROWS = 1024
"""Colormaps of larger traces are shown as block means (rows and columns)."""


BULK_QUANTILE = 0.99
"""A time axis shows at least this quantile beyond a third of its width."""


CLIP_QUANTILES = (0.999, 0.995, 0.99)


LOG_COLOUR_RATIO = 20.0
"""Colour ranges whose ends are this far apart use a logarithmic colour scale."""


LOG_SPREAD = 30.0
"""Values whose 99th percentile is this many times their 5th get a logarithmic time axis."""


LOG_FLOOR = 1e-9
"""A logarithmic time axis starts at 1 ns at the lowest; smaller values are 0 up to rounding."""


MIN_IQR_SHARE = 0.08
"""A linear time axis gives the interquartile range at least this share of its width."""
"""Upper quantiles tried in turn when the full range squeezes the bulk (long tails)."""


COLOUR_QUANTILES = (0.01, 0.99)
"""Colour range of the colormap: these quantiles of the values shown."""


CONSTANT_TOLERANCE = 1e-8
"""Values whose range is below this fraction of their size count as constant (stamp rounding)."""


UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def legend(ax: Any, **kwargs: Any) -> None:
    """A legend only when something is labelled (matplotlib warns on stderr otherwise)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kwargs)


def unit_for(seconds: float) -> tuple[float, str]:
    """(seconds per unit, unit name) of the largest unit in which ``seconds`` is >= 1."""
    size = abs(seconds)
    if size == 0 or not np.isfinite(size):
        return UNITS[0]
    for scale, name in UNITS:
        if size >= scale:
            return scale, name
    return UNITS[-1]


def fmt_time(seconds: float) -> str:
    """A time in the unit that suits it, 3 significant digits: '28 ms', '398 µs'; under 1 µs
    in whole ns, the clock's resolution ('12 ns', '< 1 ns')."""
    scale, name = unit_for(seconds)
    if name == "ns" and np.isfinite(seconds) and seconds != 0:
        if abs(seconds) < MIN_ITERATION_SECONDS / 2:
            return f"{'-' if seconds < 0 else ''}< 1 ns"
        return f"{round(seconds / MIN_ITERATION_SECONDS):.0f} ns"
    return f"{seconds / scale:.3g} {name}"


@dataclass(frozen=True)
class TimeAxis:
    """The range a time axis shows, its unit and scale, and what it leaves out.

    On a linear axis a long tail may be clipped at ``clip_quantile``; densities are in
    1/unit. On a logarithmic axis (a bulk and a tail orders of magnitude apart) every positive
    value is shown and densities are per decade, x f(x) ln 10, so that areas stay faithful.
    """

    lo: float
    """Left end (s)."""
    hi: float
    """Right end (s)."""
    scale: float
    """Seconds per unit."""
    unit: str
    clip_quantile: float | None
    """The quantile the linear axis was clipped at, None when no tail is cut off."""
    beyond: int
    """Values beyond ``hi``."""
    total: int
    largest: float
    """The largest value (s)."""
    log: bool = False
    nonpositive: int = 0
    """Values below ``LOG_FLOOR`` (0 up to timer resolution), not shown on a logarithmic axis."""

    @property
    def unit_label(self) -> str:
        return "log scale" if self.log else self.unit

    @property
    def density_label(self) -> str:
        return "density per decade" if self.log else f"density (1/{self.unit})"

    def describe(self) -> str:
        """One sentence for a caption: the unit and scale, and what is not shown."""
        if self.log:
            zeros = (
                f"; {self.nonpositive} values below 1 ns (0 up to the timer's resolution) are "
                "not shown" if self.nonpositive else ""
            )
            return (
                "Logarithmic time axis (the bulk and the tail are orders of magnitude apart, "
                f"up to {fmt_time(self.largest)}), density per decade{zeros}."
            )
        if self.clip_quantile is None:
            return f"Times in {self.unit}, density in 1/{self.unit}; every value is shown."
        q = f"{100 * self.clip_quantile:g}"
        return (
            f"Times in {self.unit}, density in 1/{self.unit}; long tail clipped at the {q}th "
            f"percentile ({fmt_time(self.hi)}): {self.beyond} of {self.total} values "
            f"({100 * self.beyond / max(self.total, 1):.2g} %) lie beyond, the largest "
            f"{fmt_time(self.largest)}."
        )

    def limits(self) -> tuple[float, float]:
        """The axis limits in units, with a margin."""
        if self.log:
            return self.lo / 1.15 / self.scale, self.hi * 1.15 / self.scale
        pad = 0.02 * (self.hi - self.lo)
        return (self.lo - pad) / self.scale, (self.hi + pad) / self.scale

    def edges(self, bins: int) -> np.ndarray:
        """Bin edges (s) over the axis range."""
        if self.log:
            return np.geomspace(self.lo, self.hi, bins + 1)
        return np.linspace(self.lo, self.hi, bins + 1)

    def grid(self, points: int = 400) -> np.ndarray:
        """Points (s) at which to draw a pdf."""
        return self.edges(points - 1)

    def apply(self, ax: Axes) -> None:
        """Set the scale and limits of ``ax``'s x axis."""
        if self.log:
            log_time_ticks(ax)
        ax.set_xlim(*self.limits())


class InView(LogLocator):
    """matplotlib's LogLocator without the ticks it places beyond the view, a decade on either
    side: matplotlib makes a tick (two lines, a grid line and two labels) for each of them only
    to leave it undrawn, at every layout pass. The ticks drawn, so the pixels, are the same
    (``tests/studies/variability/test_figure_ticks.py``); a sixth of the ticks made by a demo
    trace's figures are saved."""

    SLACK = 1e-6
    """Relative margin: matplotlib draws a tick within 1e-10 of the axis width of an end."""

    def __call__(self) -> Any:
        locs = np.asarray(super().__call__())
        if self.axis is None:
            return locs
        lo, hi = sorted(self.axis.get_view_interval())
        return locs[(locs >= lo * (1 - self.SLACK)) & (locs <= hi * (1 + self.SLACK))]


def _in_view(locator: Any) -> Any:
    if type(locator) is not LogLocator:  # somebody's own locator: left alone
        return locator
    viewed = InView(base=locator._base, subs=locator._subs)
    viewed.numticks = locator.numticks
    return viewed


def log_time_ticks(ax: Axes, which: str = "x") -> None:
    """A logarithmic axis in seconds whose ticks carry their own unit: '10 µs', '1 ms', with
    at least three labelled ticks in view (:class:`ticks.Readable`)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(Readable(_in_view(axis.get_major_locator())))
    axis.set_minor_locator(_in_view(axis.get_minor_locator()))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_time(v)))
    axis.set_minor_formatter(NullFormatter())


def _bulk_fits(x: np.ndarray, lo: float, hi: float, bulk: float, iqr: float) -> bool:
    """True when the 99th percentile lies beyond a third of [lo, hi] and the interquartile
    range covers at least ``MIN_IQR_SHARE`` of it."""
    width = hi - lo
    return bulk - lo >= width / 3 and iqr >= MIN_IQR_SHARE * width


def time_axis(values: np.ndarray | OrderedRows) -> TimeAxis:
    """The axis that shows ``values`` with the bulk spread out.

    Values whose 99th and 5th percentiles are ``LOG_SPREAD`` or more apart (a bulk and a tail
    orders of magnitude apart, as with millisecond detours) get a logarithmic axis over every
    value above 1 ns. Otherwise the full linear range is kept when its 99th percentile lies
    beyond a third of it and the interquartile range covers at least ``MIN_IQR_SHARE`` of it;
    otherwise the first of ``CLIP_QUANTILES`` that satisfies both; otherwise the log axis.
    Sorted rows (:class:`OrderedRows`) give the same axis with binary searches in place of
    passes over every value.
    """
    ordered: OrderedRows | None = None
    if isinstance(values, OrderedRows):
        ordered, x = values, values.raw.reshape(-1)  # finite: checked when sorted
    else:
        x = finite(values)
    if x.size == 0:
        raise AnalysisError("no finite times to draw; check the trace for NaN or inf")
    if ordered is None:
        lo, largest = float(x.min()), float(x.max())
    else:
        lo, largest = ordered.min(), ordered.max()
    if _constant(lo, largest, x.size):
        raise AnalysisError(
            f"every value equals {fmt_time(lo)}, a histogram would be one bar; leave it out"
        )
    q05, q25, q75, bulk, *clips = np.quantile(
        _sample(x), (0.05, 0.25, 0.75, BULK_QUANTILE, *CLIP_QUANTILES)
    )
    iqr = float(q75 - q25)
    hi: float | None = None
    clip = None
    if q05 >= LOG_FLOOR and bulk / q05 >= LOG_SPREAD:
        pass  # several decades: the log axis below
    elif _bulk_fits(x, lo, largest, bulk, iqr):
        hi = largest
    else:
        for q, value in zip(CLIP_QUANTILES, clips, strict=True):
            if value > lo and _bulk_fits(x, lo, float(value), bulk, iqr):
                hi, clip = float(value), q
                break
    if hi is not None:
        scale, unit = unit_for(hi)
        beyond = (int((x > hi).sum()) if ordered is None
                  else int(ordered.at_least(np.array([np.nextafter(hi, np.inf)]))[0]))
        return TimeAxis(lo=lo, hi=hi, scale=scale, unit=unit, clip_quantile=clip,
                        beyond=beyond, total=int(x.size), largest=largest)
    if ordered is None:
        above = x >= LOG_FLOOR  # a mask, not a copy of the values
        count = int(np.count_nonzero(above))
    else:
        firsts = ordered.firsts(np.array([LOG_FLOOR]))[:, 0]
        count = int(ordered.size - firsts.sum())
    if count < 2:
        raise AnalysisError(
            "fewer than two values above 1 ns (the others are 0 up to rounding); leave the "
            "histogram out"
        )
    if ordered is None:
        low = float(np.min(x, where=above, initial=np.inf))
    else:
        some = np.flatnonzero(firsts < ordered.shape[1])
        low = float(ordered.rows[some, firsts[some]].min())
    return TimeAxis(lo=low, hi=largest, scale=1.0, unit="s", clip_quantile=None, beyond=0,
                    total=int(x.size), largest=largest, log=True,
                    nonpositive=int(x.size - count))


AXIS_SAMPLE = 1 << 21
"""An axis is chosen from the quantiles of at most this many values (a seeded subsample of a
larger set: the quantiles that place an axis move by far less than a pixel)."""


def _sample(x: np.ndarray) -> np.ndarray:
    if x.size <= AXIS_SAMPLE:
        return x
    return x[np.random.default_rng(0).integers(0, x.size, AXIS_SAMPLE)]


HISTOGRAM_BLOCK = 1 << 20
"""Values binned per pass: a histogram of a paper-scale trace never copies the whole trace."""


def binned_counts(values: np.ndarray, bins: int, lo: float, hi: float, log: bool = False,
                  floor: float | None = None, ceiling: float | None = None,
                  ) -> tuple[np.ndarray, int]:
    """(int64 counts of ``bins`` equal bins over [lo, hi] (in log10 when ``log``), values
    below ``floor`` left out and counted), one block at a time. Each value falls in the bin
    one ``np.histogram`` call over all values would give: the bins do not depend on the block.
    Values ``ceiling`` and above count in the last bin."""
    x = np.asarray(values, dtype=np.float64).ravel()
    counts = np.zeros(bins, dtype=np.int64)
    below = 0
    for start in range(0, x.size, HISTOGRAM_BLOCK):
        block = x[start:start + HISTOGRAM_BLOCK]
        if floor is not None:
            keep = block >= floor
            below += int(block.size - np.count_nonzero(keep))
            block = block[keep]
        if ceiling is not None:
            block = np.minimum(block, ceiling)
        if log:
            with np.errstate(divide="ignore", invalid="ignore"):
                block = np.log10(block)
        c, _ = np.histogram(block, bins=bins, range=(lo, hi))
        counts += c
    return counts, below


def finite(values: np.ndarray) -> np.ndarray:
    """The finite values, flattened; no copy when all are finite (the usual case)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    ok = np.isfinite(x)
    return x if ok.all() else x[ok]


def _constant(lo: float, hi: float, size: int) -> bool:
    """``is_constant`` of ``size`` finite values from ``lo`` to ``hi``."""
    return size < 2 or hi - lo <= CONSTANT_TOLERANCE * max(abs(lo), abs(hi))


def is_constant(values: np.ndarray | OrderedRows) -> bool:
    """True when the values do not vary beyond rounding (a histogram would be one bar)."""
    if isinstance(values, OrderedRows):  # finite once sorted
        return _constant(values.min(), values.max(), values.size)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size >= 2:
        lo, hi = float(x.min()), float(x.max())
        if np.isfinite(lo) and np.isfinite(hi):  # no copy of a big, finite array
            return _constant(lo, hi, x.size)
    x = finite(x)
    if x.size < 2:
        return True
    return float(np.ptp(x)) <= CONSTANT_TOLERANCE * float(np.abs(x).max())
