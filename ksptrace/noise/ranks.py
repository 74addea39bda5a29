"""The ``ranks=`` list of a noise spec, kept as intervals.

``0``, ``0-3``, ``0+2+5`` and mixes (``0-1+4``) name the ranks (nodes with ``per=node``) that
detour. A list is held as sorted, disjoint, inclusive ``(first, last)`` intervals, never as one
number per rank: its memory grows with the text, not with the ranks it names (``0-999999`` is
one pair). Pure: no PETSc, no MPI.
"""

from __future__ import annotations

import bisect
import re

from ksptrace.errors import UsageError

Intervals = tuple[tuple[int, int], ...]
"""Sorted, disjoint, non-adjacent inclusive intervals of rank (or node) numbers."""

MAX_RANK = 2**31 - 1
"""MPI ranks are C ints: a larger number names no rank of any run."""
LISTED = 1024
"""A list naming at most this many ranks is written one number at a time (``0+1+2+3``), as
ksptrace always wrote it, so that run ids and trace names of earlier campaigns stay; a larger
one is written as intervals (``0-4095``)."""

_PART = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse(text: str, spec: str) -> Intervals:
    """``text`` as intervals; a UsageError naming ``spec`` when it is not a rank list."""
    pairs: list[tuple[int, int]] = []
    for part in text.split("+"):
        match = _PART.fullmatch(part)
        if not match or len(part) > 40:  # 40: no int() of a thousand digits
            raise UsageError(f"noise '{spec}': ranks={_short(text)} is not a rank list; use "
                             "e.g. ranks=0, ranks=0-3 or ranks=0+2")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if last < first:
            raise UsageError(f"noise '{spec}': ranks={_short(text)} has {first}-{last}, which "
                             f"runs backwards; write {last}-{first}")
        if last > MAX_RANK:
            raise UsageError(f"noise '{spec}': ranks={_short(text)} names rank {last}, beyond "
                             f"the largest MPI rank {MAX_RANK}")
        pairs.append((first, last))
    return merged(pairs)


def merged(pairs: list[tuple[int, int]]) -> Intervals:
    """Intervals sorted, with overlapping and adjacent ones joined."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(pairs):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)


def count(ranks: Intervals, below: int | None = None) -> int:
    """How many numbers the intervals hold (only those below ``below``, when given)."""
    top = None if below is None else below - 1
    return sum(max(0, (last if top is None else min(last, top)) - first + 1)
               for first, last in ranks)


def contains(ranks: Intervals, unit: int) -> bool:
    """Whether ``unit`` is one of the numbers."""
    at = bisect.bisect_right(ranks, (unit, MAX_RANK + 1)) - 1
    return at >= 0 and ranks[at][0] <= unit <= ranks[at][1]


def text(ranks: Intervals) -> str:
    """The canonical text (parses back to the same intervals)."""
    if count(ranks) <= LISTED:
        return "+".join(str(u) for first, last in ranks for u in range(first, last + 1))
    return "+".join(str(first) if first == last else f"{first}-{last}" for first, last in ranks)


def beyond(ranks: Intervals, total: int) -> str:
    """The named numbers at or above ``total`` (``5``, ``4-7``, ``4-7+9``), for a message."""
    out = [(max(first, total), last) for first, last in ranks if last >= total]
    listed = "+".join(str(a) if a == b else f"{a}-{b}" for a, b in out[:8])
    return listed + ("+..." if len(out) > 8 else "")


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
