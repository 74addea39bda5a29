"""What a trace leaves behind for the figures across traces: log-binned histograms of T_p^k, a_k
and s_k and a few summary numbers (:class:`TraceDigest`), so that the trace itself need not be
kept; and the containers of drawn figures (:class:`Drawn`, :class:`FigureSet`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.studies.variability.pages import figures
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from ksptrace.studies.variability.stats.ordered import OrderedRows
from ksptrace.trace.model import Trace

LOG_EDGES = np.logspace(-9.0, 3.0, 12 * 10 + 1)
"""Common log-spaced bin edges (1 ns .. 1000 s, 10 bins per decade) of every digest histogram,
so that histograms of different traces can be overlaid and compared bin by bin."""


@dataclass(frozen=True)
class Drawn:
    """One drawn figure."""

    key: str
    """Stable id, e.g. "ks-heatmap", "rank-histograms"."""
    title: str
    """Short heading."""
    caption: str
    """What is shown, log axis or clip quantile, units, subsampling."""
    png: bytes


@dataclass(frozen=True)
class FigureSet:
    """The figures drawn, and one line for each figure left out, saying why."""

    drawn: tuple[Drawn, ...]
    omitted: tuple[str, ...] = ()

    def get(self, key: str) -> Drawn | None:
        """The figure with this key, or None."""
        return next((d for d in self.drawn if d.key == key), None)


@dataclass(frozen=True)
class LogHistogram:
    """Counts of values in the bins of ``LOG_EDGES``; values below 1 ns (timer resolution: a
    span s_k of 0) are counted apart, values above 1000 s in the last bin."""

    counts: np.ndarray
    """int64 [len(LOG_EDGES) - 1]."""
    below: int
    """Values below 1 ns, not binned."""

    @property
    def total(self) -> int:
        return int(self.counts.sum()) + self.below

    def density(self) -> np.ndarray:
        """Density per second of each bin (integrates to the binned share of the values)."""
        total = max(self.total, 1)
        return self.counts / (total * np.diff(LOG_EDGES))


def log_histogram(values: np.ndarray | OrderedRows) -> LogHistogram:
    """The values binned on the common log grid (sorted rows: by binary searches, the same
    counts)."""
    grid = (LOG_EDGES.size - 1, float(np.log10(LOG_EDGES[0])), float(np.log10(LOG_EDGES[-1])))
    if isinstance(values, OrderedRows):
        counts, below = values.binned(*grid, log=True, floor=float(LOG_EDGES[0]),
                                      ceiling=float(LOG_EDGES[-1]))
    else:
        # equal bins in log10, a block at a time: no binary search per value, no copy
        counts, below = figures.binned_counts(
            figures.finite(values), *grid, log=True, floor=float(LOG_EDGES[0]),
            ceiling=float(LOG_EDGES[-1]))
    counts.setflags(write=False)
    return LogHistogram(counts=counts, below=below)


@dataclass(frozen=True)
class TraceDigest:
    """What the cross-configuration figures need from one trace."""

    label: str
    problem: str
    ksp: str
    n: float | None
    nprocs: int
    pipelined: bool
    times: LogHistogram
    """Kept T_p^k."""
    lower: LogHistogram
    """a_k of the kept iterations."""
    span: LogHistogram
    """s_k of the kept iterations."""
    mean: float
    """Mean of the kept T_p^k (s)."""
    std: float
    """Standard deviation of the kept T_p^k (s)."""


def _kept_columns(a: TraceAnalysis) -> np.ndarray:
    return a.layout.keep(True) if a.kept < a.iterations else np.arange(a.iterations)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def digest_of(trace: Trace, a: TraceAnalysis, ordered: OrderedRows | None = None
              ) -> TraceDigest:
    """The small summary of one trace that ``across_figures`` uses; ``ordered``: the kept
    times' rows sorted (:func:`pipeline.ordered_kept`), if made already."""
    keep = _kept_columns(a)
    times = trace.iteration_seconds
    kept: np.ndarray | OrderedRows = (
        ordered if ordered is not None and ordered.shape == (times.shape[0], keep.size)
        else times if keep.size == times.shape[1] else times[:, keep])
    attrs = dict(a.attrs)
    return TraceDigest(
        label=a.label,
        problem=str(attrs.get("problem", "")),
        ksp=a.ksp,
        n=_number(attrs.get("n")),
        nprocs=a.nprocs,
        pipelined=a.pipelined,
        times=log_histogram(kept),
        lower=log_histogram(a.uniform.lower[keep]),
        span=log_histogram(a.uniform.span[keep]),
        mean=a.bounds.mean,  # the analysis' own blocked mean and std of the kept times:
        std=a.bounds.std,  # kept.std() would copy a paper-scale trace (0.3 s)
    )
