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

    @property
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


def equal_count_cells(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges at the inner quantiles of the sorted sample ``ordered`` (repeated edges of tied
    values merged) and the counts of the cells: below the first edge, between edges (a value
    equal to an edge counts in the cell above it), above the last. The outer cells are open, so
    the sample's minimum and maximum are not edges: no empty cell puts a kink in the objective
    where a lower bound crosses the minimum."""
    cells = int(np.clip(ordered.size // CELL_VALUES, MIN_CELLS, MAX_CELLS))
    edges = np.unique(np.quantile(ordered, np.linspace(0.0, 1.0, cells + 1)[1:-1]))
    inside = np.searchsorted(ordered, edges, side="left")
    counts = np.diff(np.concatenate(([0], inside, [ordered.size])))
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


TAIL = 0.999
"""Above this cdf value an edge's upper tail is computed by the survival function."""


def cell_probabilities(fam: Family, data: Binned, theta: np.ndarray) -> np.ndarray:
    """Rows of cell probabilities, one row per row of ``theta``. Where the cdf exceeds TAIL the
    survival function gives the upper tail directly and cells there are differences of
    survival values, so a far tail keeps its probability (1 - cdf would round it to zero)."""
    p = fam.natural(theta, data.anchor)
    loc, scale = p[:, -2:-1], p[:, -1:]
    u = (data.edges[None, :] - loc) / scale
    shapes = tuple(p[:, i:i + 1] for i in range(p.shape[1] - 2))
    rows = u.shape[0]
    with np.errstate(all="ignore"):
        cdf = fam.cdf(u, shapes)
        tail = cdf > TAIL
        upper = 1.0 - cdf
        if tail.any():
            upper[tail] = fam.sf(u[tail], tuple(np.broadcast_to(s, u.shape)[tail]
                                                for s in shapes))
        ones, zeros = np.ones((rows, 1)), np.zeros((rows, 1))
        from_cdf = np.diff(np.concatenate((zeros, cdf, ones), axis=1), axis=1)
        from_sf = -np.diff(np.concatenate((ones, upper, zeros), axis=1), axis=1)
        # a cell is taken from the survival values when its lower edge is in the tail
        in_tail = np.concatenate((np.zeros((rows, 1), dtype=bool), tail), axis=1)
    return np.where(in_tail, from_sf, from_cdf)


def divergence(fam: Family, data: Binned, theta: np.ndarray) -> np.ndarray:
    """KL divergence of each row's cell probabilities from the observed frequencies (nats per
    value); NaN parameters give inf."""
    p = cell_probabilities(fam, data, theta)
    freq = data.counts / data.n
    used = freq > 0
    with np.errstate(all="ignore"):
        logs = np.log(np.maximum(p[:, used], FLOOR))
        out = (freq[used] * (np.log(freq[used]) - logs)).sum(axis=1)
    return np.where(np.isfinite(out), out, np.inf)


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
