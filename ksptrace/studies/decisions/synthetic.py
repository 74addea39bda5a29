"""Synthetic measurements for decision maps, shared by the tests, the benchmark and the docs.

Each method's time over (P, n) follows a simple cost model with a latency part that grows with
log2(P), a work part n / P and a constant:

    t_m(P, n) = a_m * log2(P) + b_m * n / P + d_m * P + c_m

with coefficients drawn so that methods cross over inside the grid (a cheap-latency method wins
at small n, a cheap-work method at large n, and d_m, a cost per process, moves the crossovers
with P). Every run is perturbed by a lognormal factor, and
each cell is measured ``repeats`` times. ``missing`` drops the runs of a random share of cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Measurements:
    """Flat measurements, one entry per run, as ``decision.decision_map`` takes them."""

    axis1: np.ndarray
    axis2: np.ndarray
    methods: np.ndarray
    times: np.ndarray


def measurements(
    rng: np.random.Generator,
    n1: int,
    n2: int,
    n_methods: int = 4,
    repeats: int = 3,
    noise: float = 0.05,
    missing: float = 0.0,
) -> Measurements:
    """Runs over P = 2..n1+1 and n1 x n2 cells of ``n_methods`` methods named m0, m1, ...

    n takes n2 integer values spaced evenly in log between 10^2 and 10^6.
    """
    p = np.arange(2, n1 + 2, dtype=np.float64)
    n = np.unique(np.round(np.geomspace(1e2, 1e6, n2)))
    a = rng.uniform(1e-7, 1e-5, n_methods)
    b = rng.uniform(1e-9, 3e-9, n_methods)
    order = np.argsort(a)
    b[order] = np.sort(b)[::-1]  # the lower the latency, the higher the work cost
    c = rng.uniform(0.0, 2e-6, n_methods)
    d = rng.uniform(0.0, 2e-7, n_methods)
    pp, nn = np.meshgrid(p, n, indexing="ij")
    keep = rng.random(pp.shape) >= missing
    keep.flat[rng.integers(keep.size)] = True  # at least one measured cell
    cells_p, cells_n = pp[keep], nn[keep]
    cells = cells_p.size
    ax1 = np.tile(np.repeat(cells_p, repeats), n_methods)
    ax2 = np.tile(np.repeat(cells_n, repeats), n_methods)
    labels = np.repeat(np.array([f"m{i}" for i in range(n_methods)]), cells * repeats)
    idx = np.repeat(np.arange(n_methods), cells * repeats)
    model = a[idx] * np.log2(ax1) + b[idx] * ax2 / ax1 + d[idx] * ax1 + c[idx]
    times = model * rng.lognormal(0.0, noise, model.size)
    return Measurements(axis1=ax1, axis2=ax2, methods=labels, times=times)
