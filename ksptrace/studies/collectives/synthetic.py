"""Synthetic collectives traces from the allreduce models: known truth for tests and docs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksptrace.studies.collectives.models import allreduce_time
from ksptrace.trace.collectives import CollectiveTrace

SIZES = tuple(1 << k for k in range(3, 21))
"""8 B .. 1 MiB."""


def allreduce_traces(
    nprocs: Sequence[int] = (2, 4, 8),
    algorithms: Sequence[str] = ("ring", "recursive_doubling", "rabenseifner"),
    sizes: Sequence[int] = SIZES,
    alpha: float = 2e-6, beta: float = 4e-10, gamma: float = 1e-10,
    repetitions: int = 5, noise: float = 0.02, cores: int = 64, seed: int = 0,
) -> list[CollectiveTrace]:
    """One trace per (P, algorithm): every rank's time is the model's times a lognormal
    factor of ``noise``; runs with P > ``cores`` are flagged oversubscribed."""
    rng = np.random.default_rng(seed)
    m = np.asarray(sizes, dtype=np.int64)
    out = []
    for p in nprocs:
        for alg in algorithms:
            base = allreduce_time(alg, p, m, alpha, beta, gamma)
            seconds = base[None, :, None] * rng.lognormal(0.0, noise, (p, m.size, repetitions))
            out.append(CollectiveTrace(
                seconds=seconds, message_bytes=m, node_ids=np.zeros(p, np.int64),
                hostnames=("synthetic",) * p,
                attrs={"operation": "allreduce", "algorithm_name": alg, "nprocs": p,
                       "oversubscribed": p > cores, "local_reduce_seconds_per_byte": gamma,
                       "generator": "collective_synthetic.allreduce_traces"}))
    return out
