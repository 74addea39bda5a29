"""A discrete-event model of P ranks running K iterations with injected detours: known truth.

Each rank's iteration k holds local work ``L[p, k] = X[p, k] + D[p, k]`` (natural work plus the
detour, as the harness spins it inside the preconditioner) and one global reduction of latency
``r``. ``s[p, k]`` is when rank p starts iteration k (0 for k = 0), ``c[k]`` when reduction k
completes. The two methods differ only in where they wait:

* **standard** (depth 0): local work, then a blocking reduction every rank waits for::

      c[k] = max_p (s[k] + L[p, k]) + r,    s[p, k + 1] = c[k]

* **pipelined**, depth d >= 1: reduction k starts when iteration k starts (its inputs are
  ready before the local work, as in PGMRES), the local work runs meanwhile, and the result is
  waited for at the end of iteration k + d - 1::

      c[k] = max_p s[p, k] + r,    s[p, k + 1] = max(s[p, k] + L[p, k], c[k + 1 - d])

  and the solve ends when every reduction has completed.

A rank's iteration time is ``T[p, k] = s[p, k + 1] - s[p, k]`` (its last one takes the drain),
and the solve time is the last rank's end, as KSPSolve's maximum over ranks. The **true cost of
the detours** of a run is its solve time minus the same run's with ``D = 0`` (the same natural
work): what the detours cost, with nothing estimated.

Every array has leading run axes (``[..., P, K]``), and the recursion loops over K only, so
thousands of runs cost one pass. The detours come from :mod:`ksptrace.noise.draw` (exactly the
harness's per-rank streams, :func:`harness_detours`) or, for many runs at once, from one
generator through the same size and hit rules (:func:`draw_detours`). Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.noise.draw import all_detours, sizes
from ksptrace.noise.spec import MAX_DETOUR_SECONDS, NoiseSpec

STANDARD = 0
"""Pipeline depth of a standard method: it waits for each reduction in its own iteration."""
PIPELINED = 1
"""Pipeline depth of PGMRES: one iteration's local work overlaps each reduction."""


@dataclass(frozen=True)
class Simulated:
    """The runs' timings: per rank and iteration, and per run."""

    times: np.ndarray
    """[..., P, K] seconds: each rank's iteration times (what the harness stamps)."""
    solve: np.ndarray
    """[...] seconds: each run's solve time (max over ranks, as KSPSolve's)."""


def simulate(work: np.ndarray, detours: np.ndarray, reduction: float, depth: int) -> Simulated:
    """The timeline of runs with natural work ``work`` and ``detours`` (both [..., P, K] s)."""
    x = np.asarray(work, dtype=float) + np.asarray(detours, dtype=float)
    if x.ndim < 2 or x.shape[-1] < 1 or x.shape[-2] < 1:
        raise ValueError(f"work and detours need [..., P, K] with P, K >= 1, got {x.shape}")
    if depth < 0 or reduction < 0:
        raise ValueError(f"depth and reduction must be >= 0, got {depth}, {reduction}")
    k_total = x.shape[-1]
    starts = np.zeros((*x.shape[:-1], k_total + 1))
    done = np.zeros((*x.shape[:-2], k_total))  # c[k]
    for k in range(k_total):
        s = starts[..., k]
        if depth == STANDARD:
            done[..., k] = (s + x[..., k]).max(axis=-1) + reduction
            starts[..., k + 1] = done[..., k][..., None]
            continue
        done[..., k] = s.max(axis=-1) + reduction
        ready = s + x[..., k]
        wait = k + 1 - depth
        starts[..., k + 1] = np.maximum(ready, done[..., wait][..., None]) if wait >= 0 else ready
    end = np.maximum(starts[..., -1], done[..., -1][..., None])  # the drain: every reduction
    times = np.diff(starts, axis=-1)
    times[..., -1] += end - starts[..., -1]
    return Simulated(times=times, solve=end.max(axis=-1))


def true_cost(work: np.ndarray, detours: np.ndarray, reduction: float, depth: int) -> np.ndarray:
    """[...] seconds: each run's solve time with its detours minus without them."""
    quiet = simulate(work, np.zeros_like(np.asarray(detours, dtype=float)), reduction, depth)
    return simulate(work, detours, reduction, depth).solve - quiet.solve


def natural_work(rng: np.random.Generator, shape: tuple[int, ...], mean: float,
                 jitter: float = 0.0, drift: float = 0.0) -> np.ndarray:
    """[..., P, K] natural work: ``mean`` times a lognormal per-iteration factor of relative
    spread ``jitter`` (mean 1) and a per-run factor of relative spread ``drift`` (mean 1: the
    machine's speed from one run to the next)."""
    out = np.full(shape, float(mean))
    if jitter > 0:
        sigma = np.sqrt(np.log1p(jitter**2))
        out *= np.exp(sigma * rng.standard_normal(shape) - sigma**2 / 2)
    if drift > 0:
        sigma = np.sqrt(np.log1p(drift**2))
        per_run = np.exp(sigma * rng.standard_normal((*shape[:-2], 1, 1)) - sigma**2 / 2)
        out *= per_run
    return out


def draw_detours(spec: NoiseSpec, rng: np.random.Generator, shape: tuple[int, ...],
                 node_ids: np.ndarray | None = None) -> np.ndarray:
    """[..., P, K] detours of many runs from one generator, by the harness's rules: per part
    of a mix, a hit with probability p per iteration per unit (rank, or node with per=node),
    a size from the same distribution, cut at MAX_DETOUR_SECONDS, only on the named units."""
    *runs, ranks, iterations = shape
    nodes = np.zeros(ranks, dtype=int) if node_ids is None else np.asarray(node_ids, dtype=int)
    if nodes.shape != (ranks,):
        raise ValueError(f"node_ids needs one node per rank ({ranks}), got {nodes.shape}")
    out = np.zeros(shape)
    for part in spec.parts:
        if not part.active:
            continue
        per_node = part.per == "node"
        units = int(nodes.max()) + 1 if per_node else ranks
        unit_shape = (*runs, units, iterations)
        hit = rng.random(unit_shape) < part.p
        size = np.minimum(sizes(part, rng, int(np.prod(unit_shape))).reshape(unit_shape),
                          MAX_DETOUR_SECONDS)
        drawn = np.where(hit, size, 0.0)
        on = np.array([part.detours_on(u) for u in range(units)])
        drawn[..., ~on, :] = 0.0
        out += drawn[..., nodes, :] if per_node else drawn
    return out


def harness_detours(spec: NoiseSpec, ranks: int, iterations: int,
                    node_ids: np.ndarray | None = None) -> np.ndarray:
    """[P, K] detours exactly as a run's ranks draw them (their seeded streams)."""
    nodes = np.zeros(ranks, dtype=int) if node_ids is None else np.asarray(node_ids, dtype=int)
    return all_detours(spec, nodes, iterations)
