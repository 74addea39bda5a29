"""The inputs a command left out, grouped, in a few words: a run of a thousand traces ends with
one line that says how many were skipped and why, not with a count alone or a thousand names."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence


def kind_of(path: str, reason: str) -> str:
    """The reason a trace was skipped without its path and details: what it shares with the
    other traces skipped for the same cause (``not a readable HDF5 file``)."""
    text = reason.replace(str(path), " ").strip(" :")
    text = re.split(r"[;(,]", text, maxsplit=1)[0].strip(" :")
    text = re.sub(r"(?<![A-Za-z])\d[\d.e+-]*", "N", text)  # numbers differ from file to file
    return text[:60].rstrip() or "unreadable"


def reasons(skipped: Sequence[tuple[str, str]], most: int = 3) -> str:
    """``12 skipped: 10 not a readable HDF5 file; 2 timings contain NaN or inf`` (the
    commonest ``most`` causes, then how many for others)."""
    counts = Counter(kind_of(path, why) for path, why in skipped)
    shown = counts.most_common(most)
    rest = len(skipped) - sum(n for _, n in shown)
    parts = [f"{n} {kind}" for kind, n in shown] + ([f"{rest} other"] if rest else [])
    return f"{len(skipped)} skipped: {'; '.join(parts)}"


def names(paths: Sequence[str | os.PathLike[str]], most: int = 3) -> str:
    """``a.h5, b.h5, c.h5 and 51 more``."""
    listed = ", ".join(str(p) for p in paths[:most])
    return listed + (f" and {len(paths) - most} more" if len(paths) > most else "")
