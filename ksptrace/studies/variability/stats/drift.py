"""What is left of the iteration times' spread once the position effects are out: a slow part
(level shifts, drift) and the randomness from rank to rank and iteration to iteration; and
whether the times are bimodal (issue 63).

A run whose iterations take 1.73 ms for their first 30 % and 1.01 ms after is not "random": its
spread is one level shift. Each iteration's mean over ranks, less its position's mean
(:mod:`.variance_split`'s groups), is averaged over ``BLOCKS`` consecutive blocks (noise averages
out, the slow part stays) and three models of the block means are compared by their residual
sum of squares: one level, a straight line (drift) and a step (one level shift, at the best
split, searched again on each side: up to ``MAX_SHIFTS``). A step is chosen when it leaves at
most ``STEP_GAIN``⁻¹ of the one level's residuals and at most half the line's (a ramp is no
step); a line when it leaves at most ``STEP_GAIN``⁻¹ of the one level's; and, failing both,
the block means themselves when the per-iteration means have a lag-1 autocorrelation of at
least ``WANDER`` (a slow wander). The slow part's share
of the variance is that model's sum of squares over every Tₚᵏ, less its degrees of freedom
times the noise mean square (as the position shares are), over the total.

The layers contract keeps this study from the segmentation study's detector (laws over P), so
the step search is a plain best-split search, tested on series of known shifts and drift.

Bimodality: a two-component normal mixture of the position-adjusted times (EM, seeded) against
one normal, by BIC; bimodal when the mixture wins by more than ``BIC_MARGIN``, both components
hold at least ``MIN_WEIGHT`` and Ashman's D = √2 |μ₁ − μ₂| / √(σ₁² + σ₂²) exceeds 2 (two
separate modes, not one skewed or heavy-tailed one). Pure: arrays in, a frozen dataclass out.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

BLOCKS = 24
"""Blocks of consecutive iterations the slow part is read from."""
MIN_PER_BLOCK = 4
STEP_GAIN = 4.0
MAX_SHIFTS = 3
WANDER = 0.5
"""A lag-1 autocorrelation of the per-iteration means from which the block means are drift."""
MIN_STEP = 0.05
"""A level shift smaller than this share of the mean iteration is not reported."""
BIC_MARGIN = 10.0
MIN_WEIGHT = 0.05
ASHMAN_D = 2.0
SAMPLE = 20_000
"""Values the mixture is fitted on (a seeded sample of a larger run)."""


@dataclass(frozen=True)
class SlowPart:
    """The slow part of one run's iteration times."""

    kind: str
    """"level shift", "drift" or "none"."""
    share: float
    """Its share (0..1) of the variance of every Tₚᵏ."""
    shifts: tuple[int, ...] = ()
    """Iterations where a new level starts (level shift only)."""
    levels: tuple[float, ...] = ()
    """Mean iteration time of each level, s (level shift only)."""
    lag1: float | None = None
    """Lag-1 autocorrelation of the position-adjusted per-iteration means."""


def _rss_const(y: np.ndarray) -> float:
    return float(((y - y.mean()) ** 2).sum())


def _rss_line(y: np.ndarray) -> tuple[float, np.ndarray]:
    x = np.arange(y.size, dtype=np.float64)
    coef = np.polyfit(x, y, 1)
    fit = np.polyval(coef, x)
    return float(((y - fit) ** 2).sum()), fit


def _best_split(y: np.ndarray, lo: int, hi: int) -> tuple[int, float] | None:
    """The split c (sides y[lo:c], y[c:hi], two blocks at least each) with the least RSS."""
    best: tuple[int, float] | None = None
    for c in range(lo + 2, hi - 1):
        rss = _rss_const(y[lo:c]) + _rss_const(y[c:hi])
        if best is None or rss < best[1]:
            best = (c, rss)
    return best


def _steps(y: np.ndarray, scale: float) -> list[int]:
    """Block indices where a new level starts: best splits, kept while each leaves at most
    1/STEP_GAIN of its side's residuals and moves the level by MIN_STEP of ``scale``."""
    cuts: list[int] = []
    sides = [(0, y.size)]
    while sides and len(cuts) < MAX_SHIFTS:
        lo, hi = sides.pop(0)
        found = _best_split(y, lo, hi)
        if found is None:
            continue
        c, rss = found
        single = _rss_const(y[lo:hi])
        step = abs(float(y[lo:c].mean() - y[c:hi].mean()))
        if single > 0 and rss * STEP_GAIN <= single and step >= MIN_STEP * scale:
            cuts.append(c)
            sides += [(lo, c), (c, hi)]
    return sorted(cuts)


def slow_part(means: np.ndarray, ranks: int, total_ss: float, noise_ms: float,
              level: float) -> tuple[SlowPart | None, np.ndarray]:
    """The slow part of position-adjusted per-iteration means ``means`` (about 0, s) of a run
    on ``ranks`` ranks whose Tₚᵏ have ``total_ss`` and noise mean square ``noise_ms``, mean
    iteration ``level`` (s): (None with too few iterations for the blocks, and) the slow
    part's offset of each iteration (zeros when there is none)."""
    k = means.size
    blocks = min(BLOCKS, k // MIN_PER_BLOCK)
    if blocks < 8 or total_ss <= 0:
        return None, np.zeros(k)
    edges = np.linspace(0, k, blocks + 1).round().astype(np.int64)
    size = np.diff(edges).astype(np.float64)
    y = np.add.reduceat(means, edges[:-1]) / size
    d = means - means.mean()
    lag1 = float((d[1:] * d[:-1]).sum() / (d * d).sum()) if (d * d).sum() > 0 else None
    const = _rss_const(y)
    line_rss, _ = _rss_line(y)
    cuts = _steps(y, level)
    kind = "none"
    if cuts:
        bounds = [0, *cuts, blocks]
        step_fit = np.concatenate([np.full(b - a, y[a:b].mean())
                                   for a, b in itertools.pairwise(bounds)])
        if _rss_const(y - step_fit) * 2.0 <= line_rss:
            kind = "level shift"
    if kind == "none" and const > 0 and line_rss * STEP_GAIN <= const:
        kind = "drift"
    wander = kind == "none" and lag1 is not None and lag1 >= WANDER
    if kind == "none" and not wander:
        return SlowPart("none", 0.0, lag1=lag1), np.zeros(k)
    if kind == "level shift":  # each shift placed to the iteration, between its neighbours
        starts = _refined([int(edges[c]) for c in cuts], means, edges, cuts)
        spans = [0, *starts, k]
        levels = [float(means[a:b].mean()) for a, b in itertools.pairwise(spans)]
        fit = np.repeat(levels, np.diff(spans))
        params = 2 * len(starts)
    elif wander:  # a slow wander: the block means themselves
        fit, params, kind = np.repeat(y, np.diff(edges)), blocks - 1, "drift"
    else:
        fit, params = _rss_line(means)[1], 1
    fit = fit - means.mean()
    share = max(float(ranks * (fit**2).sum()) - params * noise_ms, 0.0) / total_ss
    if kind == "drift":
        return SlowPart(kind, share, lag1=lag1), fit
    return (SlowPart(kind, share, tuple(starts), tuple(level + v for v in levels), lag1),
            fit)


def _refined(starts: list[int], means: np.ndarray, edges: np.ndarray,
             cuts: list[int]) -> list[int]:
    """Each block-level start moved to the iteration that best splits the iterations between
    the blocks on either side of it."""
    out: list[int] = []
    for i, c in enumerate(cuts):
        lo = int(edges[c - 1]) if c >= 1 else 0
        hi = int(edges[min(c + 1, edges.size - 1)])
        left = out[-1] if out else 0
        right = starts[i + 1] if i + 1 < len(starts) else means.size
        best, where = np.inf, starts[i]
        for s in range(max(lo, left + 1), min(hi, right - 1) + 1):
            rss = _rss_const(means[left:s]) + _rss_const(means[s:right])
            if rss < best:
                best, where = rss, s
        out.append(where)
    return out


@dataclass(frozen=True)
class Modality:
    """One normal against a mixture of two, on the position-adjusted times."""

    bimodal: bool
    delta_bic: float
    """BIC(one) − BIC(two): above BIC_MARGIN the mixture describes the data better."""
    ashman_d: float
    weights: tuple[float, float]
    means: tuple[float, float]
    """The two modes, s (the position-adjusted times, on the run's mean level)."""


def _normal_ll(x: np.ndarray) -> float:
    var = float(x.var())
    return -0.5 * x.size * (math.log(2 * math.pi * var) + 1.0) if var > 0 else math.inf


def modality(values: np.ndarray, seed: int = 0, steps: int = 200) -> Modality | None:
    """Whether ``values`` (s) are bimodal (module rule); None with fewer than 50 values or no
    spread."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size > SAMPLE:
        x = np.random.default_rng(seed).choice(x, SAMPLE, replace=False)
    if x.size < 50 or not x.std() > 0:
        return None
    q1, q3 = np.quantile(x, [0.25, 0.75])
    w, mu, var = np.array([0.5, 0.5]), np.array([q1, q3]), np.full(2, x.var() / 4)
    floor = x.var() * 1e-6
    ll = -math.inf
    for _ in range(steps):
        dens = w / np.sqrt(2 * np.pi * var) * np.exp(-0.5 * (x[:, None] - mu) ** 2 / var)
        tot = dens.sum(axis=1)
        tot = np.where(tot > 0, tot, np.finfo(float).tiny)
        new = float(np.log(tot).sum())
        r = dens / tot[:, None]
        n = r.sum(axis=0)
        if (n < 1).any():
            break
        w, mu = n / x.size, (r * x[:, None]).sum(axis=0) / n
        var = np.maximum((r * (x[:, None] - mu) ** 2).sum(axis=0) / n, floor)
        if new - ll < 1e-8 * abs(new):
            ll = new
            break
        ll = new
    one = _normal_ll(x)
    delta = (-2 * one + 2 * math.log(x.size)) - (-2 * ll + 5 * math.log(x.size))
    d = float(math.sqrt(2) * abs(mu[0] - mu[1]) / math.sqrt(var[0] + var[1]))
    order = np.argsort(mu)
    bimodal = bool(delta > BIC_MARGIN and w.min() >= MIN_WEIGHT and d > ASHMAN_D)
    return Modality(bimodal, float(delta), d, (float(w[order[0]]), float(w[order[1]])),
                    (float(mu[order[0]]), float(mu[order[1]])))
