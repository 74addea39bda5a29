"""Quantiles of a large array, equal to ``np.quantile`` to the bit, without partitioning it all.

``np.quantile`` partitions the whole array around every order statistic it needs: 0.8 to 1.3 s
for the four quantiles of a paper-scale trace's 41 M iteration times (issue 35). The order
statistics are found here by selection instead:

1. a seeded random subsample of 65,536 values is sorted, and each wanted rank gets a bracket
   [lo, hi] of sample values wide enough to hold it with a wide margin (a regular subsample
   would be biased: every 625th of 8192 x 5000 iteration times is 8 fixed iterations);
2. one pass over the array, a block at a time, counts the values below each bracket and keeps
   the few values inside it (about 2 % of them);
3. the wanted ranks are picked from those by ``np.partition``.

Step 2 checks that each rank did fall inside its bracket; if one did not (an adversarial
order of values could do that), that rank is taken by ``np.partition`` of the whole array. The
result is therefore exact in every case, and the final interpolation is numpy's own: the
quantile of the two neighbouring order statistics, computed by ``np.quantile`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ksptrace.studies.variability.stats.ordered import OrderedRows

SELECT_AT = 1 << 21
"""Arrays smaller than this go to ``np.quantile`` directly (it is fast enough there)."""
SAMPLE = 1 << 16
"""Values in the seeded subsample that places the brackets."""
BLOCK = 1 << 17
"""Values compared per step of the pass (they stay in the cache across the brackets)."""
MARGIN = 6.0
"""Bracket half-width in standard deviations of a sample rank, plus SLACK sample values."""
SLACK = 8


def quantiles(values: np.ndarray | OrderedRows, qs: Sequence[float] | np.ndarray
              ) -> np.ndarray:
    """``np.quantile(values, qs)`` (method "linear", over all values) for a 1-D ``qs``; of
    sorted rows (:class:`OrderedRows`), the order statistics are found by binary searches in
    each row instead of a pass over every value."""
    ordered: OrderedRows | None = None
    if isinstance(values, OrderedRows):
        ordered, values = values, values.raw
    x = np.asarray(values, dtype=np.float64).ravel()
    q = np.asarray(qs, dtype=np.float64)
    if x.size < SELECT_AT or q.ndim != 1 or not (np.all(q >= 0) and np.all(q <= 1)):
        return np.asarray(np.quantile(x, q))
    if not np.isfinite(x.sum()):  # NaN (or inf): numpy's own rules apply
        return np.asarray(np.quantile(x, q))
    n = x.size
    virtual = (n - 1) * q  # numpy's virtual index for "linear"
    below = np.floor(virtual).astype(np.int64)
    low = np.minimum(below, n - 1)
    high = np.minimum(below + 1, n - 1)
    wanted = np.unique(np.concatenate([low, high]))
    picked = (order_statistics(x, wanted) if ordered is None
              else sorted_order_statistics(ordered, wanted))
    stats = dict(zip(wanted.tolist(), picked.tolist(), strict=True))
    out = np.empty(q.size)
    for i in range(q.size):
        if virtual[i] >= n - 1:
            out[i] = stats[n - 1]
            continue
        gamma = virtual[i] - below[i]  # in [0, 1): np.quantile of two values lerps by it
        pair = np.array([stats[int(low[i])], stats[int(high[i])]])
        out[i] = np.quantile(pair, gamma)
    return out


def sorted_quantiles(ordered: np.ndarray, qs: Sequence[float] | np.ndarray) -> np.ndarray:
    """``np.quantile(ordered, qs)`` (method "linear") of an array already sorted ascending,
    without numpy's partition of it around every wanted rank (for the 2,000 quantiles of
    a noise model's natural sample, the partition of an array that is already in order cost
    10 ms a trace). The same operations as numpy's: the virtual index ``(n - 1) q``, its
    floor and the next rank (both the last value from ``n - 1`` on, where numpy's own gamma is
    measured from index -1), and numpy's lerp, ``a + (b - a) g`` below ``g = 0.5`` and ``b - (b -
    a) (1 - g)`` from it. ``ordered`` must be finite, 1-D and sorted, and ``qs`` within [0, 1]:
    the caller has them so (tests/studies/variability/test_selection.py checks the bits)."""
    x = np.asarray(ordered, dtype=np.float64)
    q = np.asarray(qs, dtype=np.float64)
    n = x.size
    virtual = (n - 1) * q
    floor = np.floor(virtual)
    top = virtual >= n - 1
    below = np.where(top, -1, floor).astype(np.intp)
    above = np.where(top, -1, floor + 1).astype(np.intp)
    gamma = virtual - below
    a, b = x[below], x[above]
    diff = b - a
    out = a + diff * gamma
    late = gamma >= 0.5
    out[late] = (b - diff * (1 - gamma))[late]
    return out


def _brackets(x: np.ndarray, ranks: np.ndarray) -> list[tuple[float, float, np.ndarray]]:
    """Disjoint (lo, hi, ranks) groups: each rank's value is most likely within [lo, hi]."""
    n = x.size
    sample = np.sort(x[np.random.default_rng(0).integers(0, n, SAMPLE)])
    m = sample.size
    p = ranks / max(n - 1, 1)
    half = MARGIN * np.sqrt(m * p * (1 - p)) + SLACK
    pos = p * (m - 1)
    lo_at = np.floor(pos - half).astype(np.int64)
    hi_at = np.ceil(pos + half).astype(np.int64)
    groups: list[tuple[int, int, list[int]]] = []
    for r, a, b in zip(ranks.tolist(), lo_at.tolist(), hi_at.tolist(), strict=True):
        if groups and a <= groups[-1][1]:
            start, end, members = groups[-1]
            groups[-1] = (start, max(end, b), [*members, r])
        else:
            groups.append((a, b, [r]))
    out = []
    for a, b, members in groups:
        lo = float(sample[a]) if a > 0 else -np.inf
        hi = float(sample[b]) if b < m - 1 else np.inf
        out.append((lo, hi, np.array(members, dtype=np.int64)))
    return out


def order_statistics(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The values of 0-based ``ranks`` (sorted, unique) in the ascending order of the finite
    array ``values``: ``np.sort(values)[ranks]`` without the sort."""
    x = np.asarray(values, dtype=np.float64).ravel()
    r = np.asarray(ranks, dtype=np.int64)
    groups = _brackets(x, r)
    counts = np.zeros(len(groups), dtype=np.int64)
    inside: list[list[np.ndarray]] = [[] for _ in groups]
    for start in range(0, x.size, BLOCK):
        block = x[start:start + BLOCK]
        for g, (lo, hi, _) in enumerate(groups):
            counts[g] += np.count_nonzero(block < lo)
            keep = block >= lo
            keep &= block <= hi
            inside[g].append(block[keep])
    result = np.empty(r.size)
    at = 0
    for g, (_, _, members) in enumerate(groups):
        held = np.concatenate(inside[g])
        offset = members - counts[g]
        ok = (offset >= 0) & (offset < held.size)
        if ok.any():
            picked = np.partition(held, offset[ok])
            result[at:at + members.size][ok] = picked[offset[ok]]
        for j in np.flatnonzero(~ok).tolist():
            result[at + j] = _whole(x, int(members[j]))
        at += members.size
    return result


def sorted_order_statistics(ordered: OrderedRows, ranks: np.ndarray) -> np.ndarray:
    """``order_statistics(ordered.raw, ranks)`` from rows sorted already: the brackets of the
    same seeded sample, the values below and inside each found by two binary searches per
    row (the rows are finite: checked when sorted)."""
    x = ordered.raw.reshape(-1)
    rows = ordered.rows
    r = np.asarray(ranks, dtype=np.int64)
    k = rows.shape[1]
    starts = np.arange(rows.shape[0], dtype=np.int64) * k
    result = np.empty(r.size)
    at = 0
    for lo, hi, members in _brackets(x, r):
        ends = ordered.firsts(np.array([lo, np.nextafter(hi, np.inf)]))  # [P, 2]: < lo, <= hi
        below = int(ends[:, 0].sum())
        sizes = ends[:, 1] - ends[:, 0]
        first = np.repeat(starts + ends[:, 0] - np.cumsum(sizes) + sizes, sizes)
        held = rows.reshape(-1)[first + np.arange(int(sizes.sum()))]
        offset = members - below
        ok = (offset >= 0) & (offset < held.size)
        if ok.any():
            picked = np.partition(held, offset[ok])
            result[at:at + members.size][ok] = picked[offset[ok]]
        for j in np.flatnonzero(~ok).tolist():
            result[at + j] = _whole(x, int(members[j]))
        at += members.size
    return result


def _whole(x: np.ndarray, rank: int) -> float:
    """A rank that fell outside its bracket, taken from a partition of the whole array."""
    return float(np.partition(x, rank)[rank])
