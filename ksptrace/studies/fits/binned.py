"""The objective: the multinomial log-likelihood of a sample grouped into equal-count cells.

The cells are bounded by the sample's quantiles (:func:`equal_count_cells`: about CELL_VALUES
values each, at most MAX_CELLS), plus one open cell below the first edge and one above the last,
so the cell probabilities of any distribution sum to one. Each probability is at most one, so
the log-likelihood is at most zero for every parameter value: unlike the continuous likelihood
of gamma or exponweib with a free location, which grows without bound as the location reaches
the sample minimum with a shape below one, it has a maximum to find. Equal-count cells resolve
the bulk and the tail alike (a histogram of equal widths over a range stretched by 3 % of long
detours puts the whole bulk into two or three bins), and grouping is what the clock's
quantisation allows: two iteration times in the same tick are not two distinct observations.
As the cells shrink to one value each this becomes the maximum product of spacings.

The optimiser minimises the Kullback-Leibler divergence of the fitted cell probabilities from
the observed frequencies (zero for a perfect fit, so its rounding error is relative to a small
number); the reported objective is the negative log-likelihood in nats,
``-sum_j n_j log p_j``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError
from ksptrace.studies.fits.families import Family

FLOOR = 1e-300
"""Cell probabilities below this count as this (a fit that leaves a non-empty cell no mass is
reported as degenerate, never as a maximum)."""


@dataclass(frozen=True, eq=False)
class Binned:
    """A histogram standardised for the optimiser: edges in units of the sample's interquartile
    range around its median, and the counts of the B + 2 cells (below, bins, above)."""

    edges: np.ndarray
    counts: np.ndarray
    centre: float
    spread: float

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @functools.cached_property
    def split(self) -> int:
        """Edges below this index (those below the median) are evaluated by the cdf, the others
        by the survival function."""
        return int(np.searchsorted(self.edges, 0.0, side="left"))

    @functools.cached_property
    def used(self) -> np.ndarray:
        """The non-empty cells."""
        return np.asarray(self.counts > 0)

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """The observed frequencies of the non-empty cells."""
        return np.asarray(self.counts[self.used] / self.n)

    @functools.cached_property
    def entropy(self) -> float:
        """``sum_j f_j log f_j`` over the non-empty cells (minus the frequencies' entropy)."""
        return float(np.sum(self.weights * np.log(self.weights)))

    @functools.cached_property
    def anchor(self) -> float:
        """The upper edge of the first non-empty cell (the lowest value's cell)."""
        first = int(np.flatnonzero(self.counts)[0])
        return float(self.edges[min(first, self.edges.size - 1)])

    def quantiles(self, q: np.ndarray) -> np.ndarray:
        """Quantiles of the standardised values, interpolated within bins (tails at the edges)."""
        inner = np.cumsum(self.counts[:-1])  # values below each edge
        ranks = np.asarray(q, dtype=np.float64) * self.n
        return np.asarray(np.interp(ranks, inner.astype(np.float64), self.edges))

    def moments(self) -> tuple[float, float]:
        """Mean and standard deviation of the standardised values, binned (tails at the edges)."""
        mids = np.concatenate(([self.edges[0]], 0.5 * (self.edges[1:] + self.edges[:-1]),
                               [self.edges[-1]]))
        w = self.counts / self.n
        mean = float(np.sum(w * mids))
        return mean, float(np.sqrt(max(float(np.sum(w * (mids - mean) ** 2)), 1e-12)))


CELL_VALUES = 25
"""Values per cell, about."""
MIN_CELLS = 8
MAX_CELLS = 200
TIE_SECONDS = 1e-12
TIE_RELATIVE = 1e-10
"""Two sorted values closer than ``max(TIE_SECONDS, TIE_RELATIVE * |value|)`` are one clock
reading: iteration times are differences of clock ticks (1 ns and coarser) carrying float noise
of about 1e-17 s, so one tick appears as several values a few ulps apart. No cell edge falls
between such values (:func:`equal_count_cells`)."""


def _tolerance(x: np.ndarray) -> np.ndarray:
    return np.maximum(TIE_SECONDS, TIE_RELATIVE * np.abs(x))


def tie_groups(ordered: np.ndarray) -> np.ndarray:
    """For each value of the sorted ``ordered``, the index of the first value of its group of
    ties: values chained by gaps within the tie tolerance are one group (the rule, over the
    whole sample; :func:`equal_count_cells` applies it near its edges only)."""
    n = ordered.size
    tied = np.diff(ordered) <= _tolerance(ordered[1:])
    starts = np.concatenate(([True], ~tied))
    return np.maximum.accumulate(np.where(starts, np.arange(n), 0))


def _group_bounds(ordered: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first index of the group of ties holding each ``index``, and the first index after
    it, found from ``index`` outwards by binary search (a group is rarely longer than its
    tolerance, so one or two searches settle it): the cost is that of the edges, not of the
    sample (41 M values at paper scale)."""
    n = ordered.size
    lo = index.copy()
    while True:
        step = np.searchsorted(ordered, ordered[lo] - _tolerance(ordered[lo]), side="left")
        if np.array_equal(step, lo):
            break
        lo = step
    hi = index.copy()
    while True:
        last = ordered[np.maximum(hi - 1, 0)]
        step = np.maximum(np.searchsorted(ordered, last + _tolerance(last), side="right"), hi)
        if np.array_equal(step, hi):
            break
        hi = step
    return lo, np.minimum(hi, n)


def equal_count_cells(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges at the inner quantiles of the sorted sample ``ordered`` and the counts of the cells:
    below the first edge, between edges, above the last. The tie rule: a value equal to an edge
    counts in the cell above it, and a group of tied values (equal to within the clock's
    resolution, :data:`TIE_SECONDS`) is never split: an edge that would fall inside a group is
    moved to the group's first value, so the whole group counts above it (or, for the group of
    the sample's minimum, to the next group's first value, so it counts below); edges with no
    value between them are merged into the lowest, so no inner cell is empty. The outer cells
    are open, so the sample's minimum and maximum are not edges: no empty cell puts a kink in
    the objective where a lower bound crosses the minimum. The quantiles interpolate linearly
    between order statistics (numpy's default method) read directly from the sorted array, and
    the counts are binary searches in it."""
    n = ordered.size
    cells = int(np.clip(n // CELL_VALUES, MIN_CELLS, MAX_CELLS))
    position = np.linspace(0.0, 1.0, cells + 1)[1:-1] * (n - 1)
    below = np.floor(position).astype(np.int64)
    above = np.minimum(below + 1, n - 1)
    low, high = ordered[below], ordered[above]
    edges = low + (high - low) * (position - below)
    first = np.searchsorted(ordered, edges, side="left")  # the first value at or above each edge
    inner = np.flatnonzero((first > 0) & (first < n))
    start, after = _group_bounds(ordered, first[inner])
    split = start < first[inner]  # the edge falls inside a group
    if split.any():
        start, after = start[split], after[split]
        # the minimum's group goes below the edge (to the next group's first value), a group
        # reaching the maximum above it
        moved = np.where(start > 0, start, after)
        moved = np.where(moved < n, moved, start)
        edges[inner[split]] = ordered[np.minimum(moved, n - 1)]
    edges = np.unique(edges)
    inside = np.searchsorted(ordered, edges, side="left")
    # no empty cell: of edges with no value between them keep the lowest; none at the minimum
    keep = np.concatenate(([True], np.diff(inside) > 0)) & (inside > 0) & (inside < n)
    edges, inside = edges[keep], inside[keep]
    counts = np.diff(np.concatenate(([0], inside, [n])))
    return edges, counts.astype(np.float64)


def binned(edges: np.ndarray, counts: np.ndarray) -> Binned:
    """The standardised histogram of ``counts`` (B + 2 cells) over ``edges`` (B + 1) in
    seconds; AnalysisError if it cannot constrain a fit."""
    e = np.asarray(edges, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if e.size < 2 and c.size == e.size + 1:
        raise AnalysisError("all values are equal: a constant sample has no distribution shape "
                            "to fit")
    if c.size != e.size + 1 or e.size < 2 or not np.all(np.diff(e) > 0):
        raise AnalysisError("a binned fit needs increasing edges and one count per cell "
                            "(bins plus the two tails); rebuild the histogram")
    if np.count_nonzero(c) < 3:
        raise AnalysisError("fewer than 3 histogram cells hold values: the sample is (nearly) "
                            "constant, so there is no distribution shape to fit")
    inner = np.cumsum(c[:-1])
    ranks = np.array([0.25, 0.5, 0.75]) * c.sum()
    q25, q50, q75 = np.interp(ranks, inner, e)
    spread = float(q75 - q25) or float(e[-1] - e[0])
    return Binned(edges=(e - q50) / spread, counts=c, centre=float(q50), spread=spread)


def cell_probabilities(fam: Family, data: Binned, theta: np.ndarray) -> np.ndarray:
    """Rows of cell probabilities, one row per row of ``theta``. Edges below the sample's median
    are evaluated by the cdf and the cells below them are differences of cdf values; edges at
    or above it by the survival function, and the cells above them are differences of survival
    values, so a far upper tail keeps its probability (1 - cdf would round it to zero). The
    cell between the two sets is what the others leave. Each edge is evaluated once."""
    p = fam.natural(theta, data.anchor)
    loc, scale = p[:, -2:-1], p[:, -1:]
    shapes = tuple(p[:, i:i + 1] for i in range(p.shape[1] - 2))
    m = data.split
    e = data.edges.size
    out = np.empty((p.shape[0], e + 1))
    with np.errstate(all="ignore"):
        below_median = data.edges[None, :m] - loc
        below_median /= scale
        above_median = data.edges[None, m:] - loc
        above_median /= scale
        low = fam.cdf(below_median, shapes)
        high = fam.sf(above_median, shapes)
        # below the middle cell: differences of cdf values (the first from 0); above it:
        # differences of survival values (the last to 0); the middle: what the others leave
        out[:, :m] = low
        np.subtract(low[:, 1:], low[:, :-1], out=out[:, 1:m])
        np.subtract(high[:, :-1], high[:, 1:], out=out[:, m + 1:e])
        out[:, e:] = high[:, -1:] if m < e else 0.0
        out[:, m:m + 1] = 1.0 - (low[:, -1:] if m else 0.0) - (high[:, :1] if m < e else 0.0)
    return out


def divergence(fam: Family, data: Binned, theta: np.ndarray) -> np.ndarray:
    """KL divergence of each row's cell probabilities from the observed frequencies (nats per
    value); NaN parameters give inf."""
    p = cell_probabilities(fam, data, theta)[:, data.used]
    with np.errstate(all="ignore"):  # in place: p is this call's own array
        np.log(np.maximum(p, FLOOR, out=p), out=p)
        out = data.entropy - np.multiply(p, data.weights, out=p).sum(axis=1)
    out[~np.isfinite(out) | np.isnan(theta).any(axis=1)] = np.inf  # NaN cdfs floor to finite
    return out


def negative_loglik(fam: Family, data: Binned, theta: np.ndarray) -> float:
    """``-sum_j n_j log p_j`` of one parameter vector, in nats."""
    p = cell_probabilities(fam, data, np.atleast_2d(theta))[0]
    used = data.counts > 0
    with np.errstate(all="ignore"):
        return float(-(data.counts[used] * np.log(np.maximum(p[used], FLOOR))).sum())


def starved(fam: Family, data: Binned, theta: np.ndarray) -> bool:
    """True if the fit leaves some non-empty cell with (almost) no probability."""
    p = cell_probabilities(fam, data, np.atleast_2d(theta))[0]
    return bool(np.any(p[data.counts > 0] <= FLOOR * 1e10))
