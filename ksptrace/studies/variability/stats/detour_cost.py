"""What the detours cost a run, measured inside it: KSPSolve minus K undisturbed iterations.

An iteration is *undisturbed* when no rank detoured in it nor in the ``lag`` iterations before
it. The lag is the method's pipeline depth: a pipelined method (PGMRES, depth 1) waits for
reduction k one iteration later, so another rank's detour in iteration k lengthens this rank's
iteration k + 1, which no detour marks. Counting those lagged iterations as undisturbed (the
estimator before issue 62) puts part of the detours' cost into the baseline and understates
it: on the demo's 1 ms detours, PGMRES's lagged iterations took 684-766 µs against 239-344 µs.
A detour's cost is thereby charged over every iteration it delays, up to the depth.

Against the discrete-event model's known truth (:mod:`ksptrace.noise.simulate`,
``bench/noise_truth.py``) this removes the lag's bias (-44 % on the demo's round-4 design,
-90 % and more at P = 16 and 64), but not all of it everywhere: the mean rank's baseline misses
a pipelined run's slowest rank's own natural variation, and where few detours fall the error is
a large share of a small cost. So the report gives no verdict from it (docs/noise.md).

The cost is ``solve - K * q`` with q the mean undisturbed iteration: the slowest rank's for a
standard method (every rank leaves the blocking reduction together), the mean rank's for a
pipelined one (each rank pays its own sum).

Vectorised over leading run axes; pure numpy.
"""

from __future__ import annotations

import numpy as np

PIPELINED_LAG = 1
"""Iterations after a detour that a pipelined method (PGMRES) still pays it in."""


def lag_for(pipelined: bool) -> int:
    """The lag the in-run cost leaves out after each detour: the method's pipeline depth."""
    return PIPELINED_LAG if pipelined else 0


def undisturbed(injected: np.ndarray, lag: int) -> np.ndarray:
    """[..., K] bool: no rank detoured in iteration k nor in the ``lag`` before it
    (``injected`` [..., P, K] seconds)."""
    if lag < 0:
        raise ValueError(f"lag must be >= 0, got {lag}")
    hit = np.any(np.asarray(injected) > 0, axis=-2)
    out = ~hit
    for back in range(1, lag + 1):
        out[..., back:] &= ~hit[..., :-back]
    return out


def undisturbed_mean(times: np.ndarray, injected: np.ndarray, lag: int,
                     pipelined: bool) -> tuple[np.ndarray, np.ndarray]:
    """([...] mean undisturbed iteration in seconds, NaN without one; [...] their count)."""
    t = np.asarray(times, dtype=float)
    quiet = undisturbed(injected, lag)
    per_iteration = t.mean(axis=-2) if pipelined else t.max(axis=-2)
    count = quiet.sum(axis=-1)
    total = np.where(quiet, per_iteration, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return mean, count


def in_run_cost(times: np.ndarray, injected: np.ndarray, solve: np.ndarray | float,
                pipelined: bool, lag: int | None = None) -> np.ndarray:
    """[...] seconds the detours cost each run (``solve`` minus K undisturbed iterations);
    NaN for a run without an undisturbed iteration. ``lag`` defaults to the method's depth."""
    t = np.asarray(times, dtype=float)
    mean, _ = undisturbed_mean(t, injected, lag_for(pipelined) if lag is None else lag,
                               pipelined)
    return np.asarray(solve, dtype=float) - t.shape[-1] * mean

