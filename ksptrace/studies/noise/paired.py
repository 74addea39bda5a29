"""The paired, interleaved noise experiment (issue 33): what noise costs a standard method and
its pipelined variant per iteration, each estimated from runs paired in blocks, with bootstrap
intervals, and a verdict that says when the data cannot tell.

A block holds four runs made back to back: the standard method without and with the injected
noise, and the pipelined one without and with it. Within a block the machine is as alike as it
gets, so the noise cost of a method is the noisy run's KSPSolve minus the noise-free run's, per
iteration, in the same block; drift between blocks cancels. The order inside each block follows
:func:`block_order` (ABBA over blocks, so that no cell always runs first or last).

Per block b: ``cost_s[b] = (S1 - S0) / K``, ``cost_p[b] = (P1 - P0) / K`` and their difference
``d[b] = cost_s[b] - cost_p[b]``. The estimates are the means over blocks, with Student t 95 %
intervals over blocks. Checked against the discrete-event model's known truth
(:mod:`ksptrace.noise.simulate`, issue 62): they cover it in 93-97 % of simulated campaigns from
3 to 8 blocks, where the bootstrap percentiles used before (expanded) covered it in only 72-80 %
of 3-block campaigns (the demo's design: the bootstrap cannot reach past the blocks' range).
The ratio keeps a bootstrap interval (resampled whole blocks, expanded percentiles). The
verdict:

- "pipelined pays less" when the interval of the difference lies above 0,
- "standard pays less" when it lies below 0,
- "cannot tell on this data" otherwise, or with fewer than :data:`MIN_BLOCKS` blocks, saying why.

Pure: arrays in, a frozen result out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import AnalysisError

MIN_BLOCKS = 3
"""Fewer blocks than this give no interval worth the name."""
RESAMPLES = 4000
PIPELINED_PAYS_LESS = "pipelined pays less"
STANDARD_PAYS_LESS = "standard pays less"
CANNOT_TELL = "cannot tell on this data"
CELLS = ("standard-quiet", "standard-noisy", "pipelined-quiet", "pipelined-noisy")


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class PairedNoiseEstimate:
    """Noise cost per iteration (seconds) of each method, their difference and ratio."""

    blocks: int
    standard_cost: Interval
    pipelined_cost: Interval
    difference: Interval
    """standard cost - pipelined cost: above 0 when the pipelined method pays less."""
    ratio: Interval | None
    """standard cost / pipelined cost (None when the pipelined cost's interval reaches 0)."""
    verdict: str
    why: str
    failed: bool = False
    """A method's noise cost came out below zero: the estimate failed ("cannot tell"), and
    its numbers are not shown."""


def block_order(blocks: int) -> list[tuple[int, str]]:
    """The run order of ``blocks`` blocks: (block, cell). Each block runs all four cells; even
    blocks run them forward (S0 S1 P1 P0: noise-free and noisy alternate, ABBA within the
    block), odd blocks backward, so that every cell runs early and late equally often."""
    if blocks < 1:
        raise AnalysisError(f"a paired design needs at least 1 block, got {blocks}")
    forward = ("standard-quiet", "standard-noisy", "pipelined-noisy", "pipelined-quiet")
    order: list[tuple[int, str]] = []
    for b in range(blocks):
        cells = forward if b % 2 == 0 else forward[::-1]
        order.extend((b, c) for c in cells)
    return order


def expanded_tail(n: int) -> float:
    """The lower tail share of a 95 % expanded-percentile interval over n blocks."""
    from scipy import stats

    return float(stats.norm.cdf(-np.sqrt(n / (n - 1)) * stats.t.ppf(0.975, n - 1)))


def t_half_width(per_block: np.ndarray) -> np.ndarray:
    """Half the width of the Student t 95 % interval of the mean over the last axis."""
    from scipy import stats

    x = np.asarray(per_block, dtype=np.float64)
    n = x.shape[-1]
    return np.asarray(stats.t.ppf(0.975, n - 1) * x.std(axis=-1, ddof=1) / np.sqrt(n))


def _interval(per_block: np.ndarray) -> Interval:
    mean, half = float(per_block.mean()), float(t_half_width(per_block))
    return Interval(mean, mean - half, mean + half)


def intervals(per_block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(means, lows, highs) of many campaigns at once ([C, B]: one row per campaign), each as
    :func:`from_costs` computes it: the validation against known truth runs thousands of
    simulated campaigns through this."""
    x = np.asarray(per_block, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < MIN_BLOCKS:
        raise AnalysisError(f"[campaigns, blocks] with >= {MIN_BLOCKS} blocks, got {x.shape}")
    mean, half = x.mean(axis=1), t_half_width(x)
    return mean, mean - half, mean + half


def estimate(standard_quiet: np.ndarray, standard_noisy: np.ndarray,
             pipelined_quiet: np.ndarray, pipelined_noisy: np.ndarray, iterations: int,
             seed: int = 0) -> PairedNoiseEstimate:
    """The paired estimates from KSPSolve seconds per block (one value per block per cell)."""
    cells = [np.asarray(a, dtype=np.float64).ravel() for a in
             (standard_quiet, standard_noisy, pipelined_quiet, pipelined_noisy)]
    n = cells[0].size
    if any(c.size != n for c in cells):
        raise AnalysisError("every cell needs one KSPSolve time per block; got "
                            + ", ".join(f"{name} {c.size}" for name, c in zip(CELLS, cells,
                                                                               strict=True)))
    if iterations < 1:
        raise AnalysisError(f"iterations must be >= 1, got {iterations}")
    if not all(np.isfinite(c).all() and (c > 0).all() for c in cells):
        raise AnalysisError("KSPSolve times must be positive and finite; drop the failed runs")
    s0, s1, p0, p1 = cells
    return from_costs((s1 - s0) / iterations, (p1 - p0) / iterations, seed)


def in_run_estimate(standard_cost: np.ndarray, pipelined_cost: np.ndarray, iterations: int,
                    seed: int = 0) -> PairedNoiseEstimate:
    """The same estimate from each noisy run's own detour cost (KSPSolve minus K quiet
    iterations of that run, ``InjectedNoise.detour_cost``), one per block and method: no
    noise-free run enters, so the drift between runs does not either. A block's two noisy runs
    draw the same detours (one seed per block), so their costs pair."""
    cs, cp = (np.asarray(a, dtype=np.float64).ravel() for a in (standard_cost, pipelined_cost))
    if cs.size != cp.size:
        raise AnalysisError(f"one in-run cost per block and method; got {cs.size} and {cp.size}")
    if iterations < 1:
        raise AnalysisError(f"iterations must be >= 1, got {iterations}")
    if not (np.isfinite(cs).all() and np.isfinite(cp).all()):
        raise AnalysisError("in-run costs must be finite")
    return from_costs(cs / iterations, cp / iterations, seed)


def from_costs(cost_s: np.ndarray, cost_p: np.ndarray, seed: int = 0) -> PairedNoiseEstimate:
    """Means over blocks of each method's noise cost per iteration and of their difference,
    with Student t intervals over blocks (the ratio's: bootstrap, ``seed``), and the
    verdict."""
    n = cost_s.size
    diff = cost_s - cost_p
    if n < MIN_BLOCKS:
        nan = Interval(float(diff.mean()) if n else float("nan"), float("nan"), float("nan"))
        return PairedNoiseEstimate(n, nan, nan, nan, None, CANNOT_TELL,
                                   f"{n} block(s); an interval needs at least {MIN_BLOCKS}")
    picks = np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))
    standard, pipelined, difference = (_interval(x) for x in (cost_s, cost_p, diff))
    ratio = None
    if pipelined.low > 0:
        ratios = cost_s[picks].mean(axis=1) / cost_p[picks].mean(axis=1)
        tail = expanded_tail(n)
        low, high = np.quantile(ratios, [tail, 1 - tail])
        ratio = Interval(float(cost_s.mean() / cost_p.mean()), float(low), float(high))
    negative = [(name, c) for name, c in (("standard", standard), ("pipelined", pipelined))
                if c.estimate < 0]
    if negative:
        named = " and ".join(f"the {name} method's" for name, _ in negative)
        return PairedNoiseEstimate(
            n, standard, pipelined, difference, ratio, CANNOT_TELL,
            f"{named} noise cost came out below zero, which a cost cannot be: the estimate "
            "failed (the runs' own variation swamps the injected noise)", failed=True)
    if difference.low > 0:
        verdict = PIPELINED_PAYS_LESS
        why = "the 95 % interval of the difference lies above 0"
    elif difference.high < 0:
        verdict = STANDARD_PAYS_LESS
        why = "the 95 % interval of the difference lies below 0"
    else:
        verdict = CANNOT_TELL
        why = "the 95 % interval of the difference contains 0"
    return PairedNoiseEstimate(n, standard, pipelined, difference, ratio, verdict, why)


def block_mean(per_block: np.ndarray) -> Interval | None:
    """The mean over blocks of one value per block with its Student t 95 % interval (None
    with fewer than MIN_BLOCKS blocks)."""
    x = np.asarray(per_block, dtype=np.float64).ravel()
    if x.size < MIN_BLOCKS or not np.isfinite(x).all():
        return None
    return _interval(x)
