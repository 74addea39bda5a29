"""Synthetic series for the segmentation detector (the paper's section 4.1, broadened).

Series are drawn from random PMNF functions c0 + c1 * p^i * log2(p)^j:

* **in space**: (i, j) drawn from Extra-P's search space ``TERMS`` (or the constant model), so
  a window can match the law exactly and only noise or the change make errors;
* **out of space**: i uniform in [0, 3] and j uniform in [0, 2], real-valued (fractional powers
  of the logarithm included), so the law is almost never in the search space and every window
  carries some model error. This is the whole PMNF space, including the slowly bending laws
  such as 83 + 69 p^0.15 log2(p)^0.42 that only a smooth law explains.

c0 and c1 are log-uniform over wide ranges (``C0_RANGE``, ``C1_RANGE``: four orders of
magnitude each), so the term can be negligible, comparable to or far larger than the constant.

A segmented series takes its first ``n1`` points from one function f and the rest from a
second function g with a different (i, j), joined in one of two ways:

* **jump**: g as drawn, so the values jump at the change (almost always);
* **continuous**: g offset so that it agrees with f on the first point of the second segment,
  as in the paper's example (p^2 up to p = 5, then 30 + p, which meets p^2 at p = 6); that
  point is shared by both laws.

A change must be visible: g (after the offset) departs from f's continuation by at least
``MIN_DEPARTURE`` (relative) somewhere on the second segment; pairs that do not are redrawn.
Otherwise two nearly constant laws would make a "segmented" series that is one law to within
a per cent, which no detector should flag.

A noise level x applies a uniform relative perturbation y * (1 + u), u ~ U(-x, x). Points are
p = 1..n (linear) or p = 2^1..2^n (geometric).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ksptrace.studies.segmentation.pmnf import TERMS

Space = Literal["in", "out"]
Spacing = Literal["linear", "geometric"]
Join = Literal["jump", "continuous"]

NOISE_LEVELS: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05, 0.10, 0.15)
"""Relative noise levels of the noise table (0-15 %)."""
C0_RANGE: tuple[float, float] = (0.1, 1000.0)
"""c0 is log-uniform over this range."""
C1_RANGE: tuple[float, float] = (0.01, 100.0)
"""c1 is log-uniform over this range."""
MIN_DEPARTURE = 0.2
"""Smallest largest relative departure of the second law from the first law's continuation."""


def points(n: int, spacing: Spacing) -> np.ndarray:
    """p = 1..n, or p = 2^1..2^n."""
    k = np.arange(1, n + 1, dtype=np.float64)
    return k if spacing == "linear" else 2.0**k


@dataclass(frozen=True)
class Functions:
    """S random PMNF functions c0 + c1 * p^i * log2(p)^j (c1 = 0 for a constant)."""

    c0: np.ndarray
    c1: np.ndarray
    i: np.ndarray
    j: np.ndarray

    def __call__(self, p: np.ndarray) -> np.ndarray:
        """float64 [S, len(p)]"""
        p = np.asarray(p, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.power(p[None, :], self.i[:, None]) * np.where(
                self.j[:, None] == 0, 1.0, np.power(np.log2(p)[None, :], self.j[:, None])
            )
        return self.c0[:, None] + self.c1[:, None] * np.nan_to_num(t)

    def same_law(self, other: Functions) -> np.ndarray:
        """bool [S]: both functions have the same (i, j)."""
        return (
            np.isclose(self.i, other.i)
            & np.isclose(self.j, other.j)
            & ((self.c1 == 0) == (other.c1 == 0))
        )

    def take(self, rows: np.ndarray) -> Functions:
        return Functions(self.c0[rows], self.c1[rows], self.i[rows], self.j[rows])


def _log_uniform(rng: np.random.Generator, bounds: tuple[float, float], size: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(bounds[0]), np.log(bounds[1]), size))


def draw_functions(rng: np.random.Generator, size: int, space: Space) -> Functions:
    """``size`` random functions inside or outside Extra-P's search space."""
    c0 = _log_uniform(rng, C0_RANGE, size)
    c1 = _log_uniform(rng, C1_RANGE, size)
    if space == "in":
        k = rng.integers(-1, len(TERMS), size)  # -1: the constant model
        table = np.array([[float(i), float(j)] for i, j in TERMS])
        i = np.where(k >= 0, table[np.maximum(k, 0), 0], 0.0)
        j = np.where(k >= 0, table[np.maximum(k, 0), 1], 0.0)
        c1 = np.where(k >= 0, c1, 0.0)
    else:
        i = rng.uniform(0.0, 3.0, size)
        j = rng.uniform(0.0, 2.0, size)
    return Functions(c0=c0, c1=c1, i=i, j=j)


def _second_law(f: Functions, g: Functions, p: np.ndarray, n1: int, join: Join) -> np.ndarray:
    """The second segment's values [S, n - n1] (offset for a continuous join)."""
    tail = g(p[n1:])
    if join == "continuous":
        tail = tail - tail[:, :1] + f(p[n1 : n1 + 1])
    return tail


def draw_segmented(
    rng: np.random.Generator, size: int, space: Space, p: np.ndarray, n1: int, join: Join
) -> np.ndarray:
    """[size, n] noise-free segmented series: f on the first n1 points, g on the rest, where g
    has another law than f and departs visibly from it (redrawn up to 100 times otherwise)."""
    f = draw_functions(rng, size, space)
    head = f(p[:n1])
    tail = np.empty((size, p.size - n1))
    todo = np.arange(size)
    for _ in range(100):
        g = draw_functions(rng, todo.size, space)
        ft = f.take(todo)
        cand = _second_law(ft, g, p, n1, join)
        cont = ft(p[n1:])
        departure = np.max(np.abs(cand - cont) / np.abs(cont), axis=1)
        ok = ~ft.same_law(g) & (departure >= MIN_DEPARTURE)
        tail[todo[ok]] = cand[ok]
        todo = todo[~ok]
        if todo.size == 0:
            break
    if todo.size:  # practically never: keep what the last draw gave
        tail[todo] = _second_law(f.take(todo), draw_functions(rng, todo.size, space), p, n1, join)
    return np.concatenate([head, tail], axis=1)


def add_noise(rng: np.random.Generator, y: np.ndarray, level: float) -> np.ndarray:
    """y * (1 + u), u uniform in [-level, level]."""
    if level <= 0:
        return y
    return y * (1.0 + rng.uniform(-level, level, y.shape))


@dataclass(frozen=True)
class Batch:
    """S synthetic series over the same points, with their truth."""

    p: np.ndarray
    y: np.ndarray
    """float64 [S, n]"""
    segmented: np.ndarray
    """bool [S]"""
    n1: int
    """Points of the first law in segmented series (the change lies between n1-1 and n1, or
    on n1 for a continuous join)."""
    join: Join = "jump"


def make_batch(
    rng: np.random.Generator,
    size: int,
    space: Space,
    spacing: Spacing,
    noise: float,
    n1: int,
    n2: int,
    segmented: bool,
    join: Join = "jump",
) -> Batch:
    """``size`` series of n1 + n2 points, all segmented (first n1 from one law) or none."""
    p = points(n1 + n2, spacing)
    if segmented:
        y = draw_segmented(rng, size, space, p, n1, join)
    else:
        y = draw_functions(rng, size, space)(p)
    return Batch(p, add_noise(rng, y, noise), np.full(size, segmented), n1, join)


def located(lo: np.ndarray, hi: np.ndarray, n1: int, join: Join = "jump") -> np.ndarray:
    """bool: the estimate (lo, hi) holds the change. A jump lies between points n1-1 and n1, so
    (n1-1, n1) or either of them as a shared point; a continuous join lies on point n1, so any
    estimate with lo <= n1 <= hi one step wide or less."""
    if join == "continuous":
        return (lo <= n1) & (n1 <= hi) & (hi - lo <= 1)
    exact = (lo == n1 - 1) & (hi == n1)
    shared = (lo == hi) & ((lo == n1 - 1) | (lo == n1))
    return exact | shared
