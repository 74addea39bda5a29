"""What to measure next when a segment is too short for its own model."""

from __future__ import annotations

import itertools

import numpy as np


def suggest_points(all_p: np.ndarray, seg_p: np.ndarray, count: int, side: str) -> np.ndarray:
    """``count`` new integer p inside or beyond a short segment, following the data's spacing.

    The right-most segment is extended upwards (doubling for powers of two, else the last step);
    any other segment is filled between its points, then extended away from its neighbour.
    """
    have = set(np.round(all_p).astype(int).tolist())
    new: list[int] = []
    geometric = all_p.size >= 3 and bool(np.allclose(all_p[1:] / all_p[:-1], all_p[1] / all_p[0]))
    ratio = float(all_p[1] / all_p[0]) if geometric else 1.0
    step = float(np.median(np.diff(all_p))) if all_p.size > 1 else 1.0

    def take(v: float) -> None:
        k = round(v)
        if k >= 1 and k not in have and len(new) < count:
            have.add(k)
            new.append(k)

    lo, hi = float(seg_p[0]), float(seg_p[-1])
    if side != "right":
        for a, b in itertools.pairwise(seg_p):
            take(np.sqrt(a * b) if geometric else (a + b) / 2)
    cur = hi if side == "right" else lo
    for _ in range(64):
        if len(new) >= count:
            break
        if side == "right":
            cur = cur * ratio if geometric else cur + step
        else:
            cur = cur / ratio if geometric else cur - step
            if cur < 1:
                # Nothing below p = 1: fill between points at ever finer spacing instead.
                grid = np.linspace(lo, hi, 2 * (count + seg_p.size) + 1)
                for v in grid:
                    take(float(v))
                break
        take(cur)
    return np.array(sorted(new), dtype=np.float64)


def fmt_list(a: np.ndarray) -> str:
    return ", ".join(f"{v:g}" for v in np.asarray(a).ravel())
