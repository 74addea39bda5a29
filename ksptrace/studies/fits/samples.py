"""Varied synthetic traces for the engine's golden maxima and its benchmark.

Shaped like the campaigns the engine must fit: six KSP types, two problems (a laplace1d-like
one, 0.1 ms iterations with rare short detours, and an iceflow-like one, 2 ms iterations with
more node noise and more, longer detours), P from 1 to 4 and K from 200 to 5000, with the
iteration times quantised to a 10 ns clock as a timer would. Built on the package's synthetic
generator (:mod:`ksptrace.trace.synthetic`), seeded, so tests, the fixture writer and the
benchmark see the same traces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import Noise, synthetic_trace, trace_from_times

KSPS = ("gmres", "pgmres", "bcgs", "pipebcgs", "cg", "pipecg")
PROBLEMS: dict[str, tuple[float, Noise | None]] = {
    "laplace1d": (1e-4, None),
    "iceflow": (2e-3, Noise(node=0.12, rank=0.02, detour_probability=6e-3, detour_mean=2.0)),
}
"""Problem -> (base iteration seconds, noise; None: the generator's default for the KSP)."""
CLOCK = 1e-8
SIZES = ((1, 5000), (2, 1200), (3, 700), (4, 200), (2, 2500), (4, 3000))
"""(P, K) pairs the traces cycle through."""


@dataclass(frozen=True)
class Varied:
    """One varied trace and what it stands for."""

    name: str
    ksp: str
    problem: str
    nprocs: int
    iterations: int
    trace: Trace


def varied_trace(index: int) -> Varied:
    """The ``index``-th varied trace: KSP types cycle fastest, then problems, then sizes."""
    ksp = KSPS[index % len(KSPS)]
    problem = tuple(PROBLEMS)[(index // len(KSPS)) % len(PROBLEMS)]
    nprocs, iterations = SIZES[(index // (len(KSPS) * len(PROBLEMS)) + index) % len(SIZES)]
    base, noise = PROBLEMS[problem]
    made = synthetic_trace(nprocs, iterations, 1, ksp, seed=1000 + index, base_seconds=base,
                           noise=noise)
    times = np.maximum(np.round(made.iteration_seconds / CLOCK), 1.0) * CLOCK
    trace = trace_from_times(times, np.arange(nprocs, dtype=np.int64), ksp=ksp)
    name = f"{index:04d}-{ksp}-{problem}-p{nprocs}-k{iterations}"
    return Varied(name, ksp, problem, nprocs, iterations, trace)
