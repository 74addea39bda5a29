"""How much fitting on a seeded subsample moves a fit (the ``--fit-size`` trade-off).

Fits a family on subsamples of several sizes and on all the data, and compares the fitted
mean and 99th percentile with the full fit's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ksptrace.studies.variability.stats.fitting import (
    DEFAULT_BINS,
    checked,
    fit_one,
    histogram,
    subsample,
)
from ksptrace.studies.variability.stats.models import mean_of


@dataclass(frozen=True)
class SubsampleEffect:
    """How much fitting on a subsample moves a fit, relative to the fit on all the data."""

    name: str
    sizes: tuple[int, ...]
    """Subsample sizes; the last is all the data."""
    params: tuple[tuple[float, ...], ...]
    mean_rel_change: tuple[float, ...]
    """|mean(subsample fit) / mean(full fit) - 1| for each size."""
    q99_rel_change: tuple[float, ...]
    """The same for the 99th percentile."""


def subsampling_effect(
    x: np.ndarray, sizes: Sequence[int], name: str = "johnsonsu", seed: int = 0
) -> SubsampleEffect:
    """Fit ``name`` on subsamples of each size and on all of ``x``; compare mean and 99th pct."""
    flat = checked(x)
    all_sizes = (*tuple(int(s) for s in sizes if s < flat.size), int(flat.size))
    hist = histogram(flat, bins=DEFAULT_BINS)
    fits = [fit_one(name, subsample(flat, s, seed), hist, seed) for s in all_sizes]
    ref = fits[-1].frozen()
    ref_mean, ref_q99 = mean_of(ref), float(ref.ppf(0.99))
    means = tuple(abs(mean_of(f.frozen()) / ref_mean - 1.0) for f in fits)
    q99s = tuple(abs(float(f.frozen().ppf(0.99)) / ref_q99 - 1.0) for f in fits)
    return SubsampleEffect(
        name=name,
        sizes=all_sizes,
        params=tuple(f.params for f in fits),
        mean_rel_change=means,
        q99_rel_change=q99s,
    )
