"""Seeded synthetic traces with the structure real runs show, for tests, docs and benchmarks.

The iteration time of rank p at iteration k is built as

    T_p^k = base * work_k * level_k * (1 + node_{n(p),k} + rank_{p,k}) + detour_{p,k}

* ``work_k`` follows the restart cycle: GMRES iterations grow with the basis (two per cent per
  position), and the two pipeline-fill iterations of each pipelined-GMRES cycle are cheap.
* ``level_k`` is non-stationary: a slow log-normal random walk plus one or two episodes in which
  every iteration is slower, as the machine's state changes over time.
* Synchronising methods (GMRES, BiCGStab) run in lockstep on a node: a strong node term and a
  tiny rank term. Pipelined methods decouple ranks: a small node term, a larger rank term and a
  persistent per-rank factor (ranks differ, so KS tests between them reject).
* Rare detours (operating-system noise) add an exponential delay to single iterations.

With ``stationary=True`` every T_p^k is instead an independent draw from
Uniform(base, base * (1 + spread)): no node, cycle or time structure, so the stationary models
hold exactly. This module is pure numpy and imports nothing from the analysis layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import UsageError
from ksptrace.trace.model import Trace

PIPELINED = frozenset({"pgmres", "pipefgmres", "pipebcgs", "pipecg", "pipecr"})
RESTARTED = frozenset({"gmres", "fgmres", "pgmres", "pipefgmres"})
FILL = 2
"""Pipeline-fill iterations per pipelined-GMRES cycle."""


@dataclass(frozen=True)
class Noise:
    """Relative sizes of the variability terms (fractions of the base iteration time)."""

    node: float
    """Standard deviation of the per-node, per-iteration term."""
    rank: float
    """Standard deviation of the per-rank, per-iteration term."""
    detour_probability: float = 2e-3
    detour_mean: float = 3.0
    """Mean detour length, in base iteration times."""
    rank_bias: float = 0.0
    """Standard deviation of a persistent per-rank factor (uneven communication work)."""


SYNCHRONISING_NOISE = Noise(node=0.08, rank=0.002)
PIPELINED_NOISE = Noise(
    node=0.015, rank=0.05, detour_probability=2e-4, detour_mean=1.0, rank_bias=0.03
)


def _work(iterations: int, ksp: str, restart: int) -> tuple[np.ndarray, int]:
    """Relative work of each recorded iteration and the number of work (non-fill) iterations."""
    k = np.arange(iterations)
    if ksp in RESTARTED:
        fill = FILL if ksp in PIPELINED else 0
        pos = k % (restart + fill)
        work = 1.0 + 0.02 * (pos - fill)
        work[pos < fill] = 0.15
        return work, int(np.count_nonzero(pos >= fill))
    return np.ones(iterations), iterations


def _level(iterations: int, rng: np.random.Generator) -> np.ndarray:
    """A non-stationary multiplier around 1: AR(1) in log space plus slow episodes."""
    shocks = rng.normal(0.0, 0.03, iterations)
    log_level = np.empty(iterations)
    acc = 0.0
    for k in range(iterations):
        acc = 0.97 * acc + shocks[k]
        log_level[k] = acc
    level = np.exp(log_level)
    for _ in range(int(rng.integers(1, 3))):
        length = max(1, iterations // 10)
        start = int(rng.integers(0, max(1, iterations - length)))
        level[start : start + length] *= 1.25
    return level


def synthetic_trace(
    nprocs: int = 64,
    iterations: int = 300,
    ranks_per_node: int = 16,
    ksp: str = "gmres",
    restart: int = 30,
    seed: int = 0,
    stationary: bool = False,
    base_seconds: float = 4e-4,
    spread: float = 0.5,
    n: int = 1_000_000,
    noise: Noise | None = None,
) -> Trace:
    """A synthetic trace of ``iterations`` recorded iterations on ``nprocs`` ranks.

    For pipelined GMRES the recorded iterations include two fill iterations per cycle of
    ``restart + 2``; the ``iterations`` attribute holds the number of work iterations, as a
    harness that forces K work iterations would record.
    """
    if nprocs < 1 or iterations < 1 or ranks_per_node < 1:
        raise UsageError(
            f"nprocs, iterations and ranks_per_node must be >= 1, got "
            f"{nprocs}, {iterations}, {ranks_per_node}"
        )
    if base_seconds <= 0 or spread <= 0:
        raise UsageError("base_seconds and spread must be > 0")
    name = ksp.lower()
    rng = np.random.default_rng(seed)
    node_ids = np.arange(nprocs, dtype=np.int64) // ranks_per_node
    n_nodes = int(node_ids[-1]) + 1
    pipelined = name in PIPELINED
    if stationary:
        times = rng.uniform(base_seconds, base_seconds * (1.0 + spread), size=(nprocs, iterations))
        work_iterations = iterations
    else:
        mix = noise or (PIPELINED_NOISE if pipelined else SYNCHRONISING_NOISE)
        work, work_iterations = _work(iterations, name, restart)
        scale = base_seconds * work * _level(iterations, rng)
        times = rng.standard_normal((nprocs, iterations))
        times *= mix.rank
        node_term = np.abs(rng.normal(0.0, mix.node, size=(n_nodes, iterations)))
        for node in range(n_nodes):
            times[node * ranks_per_node : (node + 1) * ranks_per_node] += node_term[node]
        times += 1.0
        if mix.rank_bias > 0:
            times *= (1.0 + rng.normal(0.0, mix.rank_bias, nprocs))[:, None]
        times *= scale
        # A detour on one rank of a lockstep method holds up its whole node at the next
        # reduction; a pipelined method absorbs it on the rank that suffered it.
        rows = n_nodes if not pipelined else nprocs
        n_detours = int(rng.binomial(rows * iterations, mix.detour_probability))
        where = rng.integers(0, rows * iterations, n_detours)
        delay = rng.exponential(mix.detour_mean * base_seconds, n_detours)
        if pipelined:
            times.reshape(-1)[where] += delay
        else:
            for row, k, d in zip(where // iterations, where % iterations, delay, strict=True):
                times[row * ranks_per_node : (row + 1) * ranks_per_node, k] += d
        np.maximum(times, 0.05 * base_seconds, out=times)
    setup = 1e-3 + 1e-5 * rng.random(nprocs)
    if pipelined:
        solve = times.sum(axis=1) + setup
    else:
        solve = float(times.max(axis=0).sum()) + setup
    stamps = np.empty((nprocs, iterations + 1))
    stamps[:, 0] = 100.0 + 1e-3 * rng.random(nprocs)
    np.cumsum(times, axis=1, out=stamps[:, 1:])
    stamps[:, 1:] += stamps[:, :1]
    del times
    attrs: dict[str, str | int | float | bool] = {
        "problem": "synthetic",
        "n": int(n),
        "ksp": name,
        "pc": "jacobi",
        "iterations": int(work_iterations),
        "restart": int(restart) if name in RESTARTED else 0,
        "nprocs": int(nprocs),
        "ranks_per_node": int(ranks_per_node),
        "nnz": int(3 * n),
        "seed": int(seed),
        "stationary": bool(stationary),
        "generator": "ksptrace.trace.synthetic",
    }
    return Trace(
        stamps=stamps,
        residual_norms=np.geomspace(1.0, 1e-6, iterations + 1),
        node_ids=node_ids,
        hostnames=tuple(f"synth{i:05d}" for i in range(n_nodes) for _ in range(ranks_per_node))[
            :nprocs
        ],
        solve_seconds=solve,
        attrs=attrs,
    )


def inject_outliers(
    times: np.ndarray,
    fraction: float,
    low: float,
    high: float,
    seed: int = 0,
    whole_iterations: bool = True,
) -> np.ndarray:
    """A copy of a [P, K] matrix of T_p^k in which a ``fraction`` of the entries take long.

    The chosen iterations (``whole_iterations``: every rank of a column, as when the whole job
    is held up, so that a_k carries the outlier too) or single entries get an extra delay drawn
    uniformly from [low, high] seconds: the millisecond detours seen in real traces.
    """
    x = np.array(times, dtype=np.float64, copy=True)
    if x.ndim != 2 or not 0 <= fraction <= 1 or not 0 <= low <= high:
        raise UsageError(
            f"inject_outliers needs a [P, K] matrix, 0 <= fraction <= 1 and 0 <= low <= high, "
            f"got shape {x.shape}, fraction {fraction}, range {low}..{high}"
        )
    rng = np.random.default_rng(seed)
    if whole_iterations:
        count = round(fraction * x.shape[1])
        cols = rng.choice(x.shape[1], size=count, replace=False)
        x[:, cols] += rng.uniform(low, high, size=count)
    else:
        count = round(fraction * x.size)
        flat = rng.choice(x.size, size=count, replace=False)
        x.reshape(-1)[flat] += rng.uniform(low, high, size=count)
    return x


def trace_from_times(
    times: np.ndarray,
    node_ids: np.ndarray | None = None,
    ksp: str = "gmres",
    restart: int = 30,
    seed: int = 0,
    n: int = 1_000_000,
) -> Trace:
    """A trace whose T_p^k are exactly ``times`` [P, K] (up to the rounding of the stamps).

    ``node_ids`` [P] gives each rank's node (default: all on node 0). KSPSolve is the lockstep
    time sum_k max_p T_p^k for a synchronising ``ksp`` and each rank's sum for a pipelined one,
    plus a millisecond of setup. Every iteration is a work iteration (no pipeline fill).
    """
    x = np.asarray(times, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1 or not (x > 0).all():
        raise UsageError(f"times must be a positive [P, K >= 1] matrix, got shape {x.shape}")
    nprocs, iterations = x.shape
    ids = np.zeros(nprocs, dtype=np.int64) if node_ids is None else np.asarray(node_ids)
    if ids.shape != (nprocs,):
        raise UsageError(f"node_ids must have shape ({nprocs},), got {ids.shape}")
    name = ksp.lower()
    rng = np.random.default_rng(seed)
    setup = 1e-3 + 1e-5 * rng.random(nprocs)
    solve = x.sum(axis=1) + setup if name in PIPELINED else float(x.max(axis=0).sum()) + setup
    stamps = np.empty((nprocs, iterations + 1))
    stamps[:, 0] = 100.0
    np.cumsum(x, axis=1, out=stamps[:, 1:])
    stamps[:, 1:] += 100.0
    attrs: dict[str, str | int | float | bool] = {
        "problem": "synthetic",
        "n": int(n),
        "ksp": name,
        "pc": "jacobi",
        "iterations": int(iterations),
        "restart": int(restart) if name in RESTARTED else 0,
        "nprocs": int(nprocs),
        "ranks_per_node": int(np.bincount(ids).max()),
        "nnz": int(3 * n),
        "seed": int(seed),
        "generator": "ksptrace.trace.synthetic.trace_from_times",
    }
    return Trace(
        stamps=stamps,
        residual_norms=np.geomspace(1.0, 1e-6, iterations + 1),
        node_ids=ids.astype(np.int64),
        hostnames=tuple(f"synth{int(i):05d}" for i in ids),
        solve_seconds=solve,
        attrs=attrs,
    )
