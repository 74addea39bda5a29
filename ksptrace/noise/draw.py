"""Drawing the detours of a run: one reproducible stream per rank (or per node).

Every rank draws only its own row, from a generator seeded by ``(seed, unit)`` where the unit is
the rank, or the node with ``per=node`` (so all ranks of a node get the same detours without
communicating). The draw never depends on the number of ranks. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from ksptrace.noise.spec import MAX_DETOUR_SECONDS, NoiseSpec


def sizes(spec: NoiseSpec, rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` detour sizes of one spec (given that a detour happens), uncapped."""
    d = dict(spec.params)
    if spec.dist == "fixed":
        return np.full(count, d["value"])
    if spec.dist == "exponential":
        return rng.exponential(d["scale"], count)
    if spec.dist == "lognormal":
        return d["median"] * np.exp(d["sigma"] * rng.standard_normal(count))
    if spec.dist == "pareto":
        # Classical Pareto with minimum `scale`: numpy's pareto is the Lomax (shifted) form.
        return d["scale"] * (1.0 + rng.pareto(d["shape"], count))
    if spec.dist == "uniform":
        return rng.uniform(d["low"], d["high"], count)
    return np.zeros(count)


def detours(spec: NoiseSpec, unit: int, iterations: int, part: int = 0) -> np.ndarray:
    """Seconds of detour in each of ``iterations`` iterations for one unit (rank or node) from
    one spec; ``part``, the spec's place in a mix, keeps the streams of a mix's specs apart."""
    if iterations < 0 or unit < 0:
        raise ValueError(f"unit and iterations must be >= 0, got {unit}, {iterations}")
    if spec.also:
        raise ValueError("detours() draws one spec; use rank_detours for a mix")
    if not spec.active or iterations == 0 or not spec.detours_on(unit):
        return np.zeros(iterations)
    rng = np.random.default_rng([spec.seed, unit] if part == 0 else [spec.seed, unit, part])
    hit = rng.random(iterations) < spec.p
    drawn = np.minimum(sizes(spec, rng, iterations), MAX_DETOUR_SECONDS)  # a heavy tail's cap
    return np.where(hit, drawn, 0.0)


def rank_detours(spec: NoiseSpec, rank: int, node_id: int, iterations: int) -> np.ndarray:
    """The detours of one rank: its own stream, or its node's with ``per=node``; for a mix of
    specs, the sum of each spec's."""
    out = np.zeros(iterations)
    for i, part in enumerate(spec.parts):
        out += detours(part, node_id if part.per == "node" else rank, iterations, i)
    return out


def all_detours(spec: NoiseSpec, node_ids: np.ndarray, iterations: int) -> np.ndarray:
    """[P, K] detours of every rank, as the ranks draw them (for tests and analysis)."""
    return np.stack(
        [rank_detours(spec, p, int(n), iterations) for p, n in enumerate(np.asarray(node_ids))]
    ) if len(node_ids) else np.zeros((0, iterations))
