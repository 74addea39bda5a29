"""The algorithm that ran, per trace and message size, for the tables and maps (issue 32).

A forced algorithm may hand small messages to another one (``algorithm_ran`` in the trace,
from :mod:`ksptrace.collectives.fallbacks`). Comparing "ring" with "recursive_doubling" where
both ran recursive doubling would compare identical code under two names, so the best-algorithm
table, the decision maps and the rules files label each (trace, size) by the algorithm that
ran: the two are merged into one, and a note names each merge. Traces written before
``algorithm_ran`` existed keep their forced name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ksptrace.trace.collectives import CollectiveTrace

DEFAULT = "default"
"""The algorithm name of a run that forced nothing."""


def ran_at(t: CollectiveTrace) -> dict[int, str]:
    """Message size in bytes -> the algorithm that ran (the forced one when not recorded)."""
    raw = t.attrs.get("algorithm_ran")
    try:
        ran = json.loads(str(raw)) if raw else {}
    except ValueError:
        ran = {}
    if not isinstance(ran, dict):
        ran = {}
    return {int(m): str(ran.get(str(int(m)), t.algorithm)) for m in t.message_bytes}


def labels(t: CollectiveTrace, forced_label: str) -> list[str]:
    """One label per message size: ``forced_label`` where the forced algorithm ran, else the
    name of the one that ran (with the trace's test-call and timing-mode suffixes, if any)."""
    suffix = "".join("/" + part for part in forced_label.split("/")[1:]
                     if part.startswith(("test", "back-to-back")))
    return [forced_label if ran == t.algorithm else ran + suffix
            for ran in ran_at(t).values()]


def merge_notes(traces: Sequence[CollectiveTrace]) -> list[str]:
    """One line per (operation, P, forced algorithm, algorithm that ran) that differ, naming the
    sizes where it ran as runs of consecutive measured sizes (issue 66: "ring at 4-4 B", and
    ranges of two algorithms that overlapped where they alternate)."""
    found: dict[tuple[str, int, str, str], list[int]] = {}
    measured: dict[tuple[str, int, str], set[int]] = {}
    for t in traces:
        for size, ran in ran_at(t).items():
            measured.setdefault((t.operation, t.nprocs, t.algorithm), set()).add(size)
            if ran != t.algorithm:
                found.setdefault((t.operation, t.nprocs, t.algorithm, ran), []).append(size)
    out = []
    for (op, p, forced, ran), s in sorted(found.items()):
        where = size_runs(sorted(set(s)), sorted(measured[(op, p, forced)]))
        out.append((f"{op} at P = {p}: the default (the library's own choice) ran {ran} at "
                    f"{where}; those runs are counted as {ran}") if forced == DEFAULT else
                   (f"{op} at P = {p}: the forced {forced} ran {ran} at {where} (the "
                    f"library's fallback); those runs are counted as {ran}"))
    return out


def size_runs(sizes: Sequence[int], grid: Sequence[int]) -> str:
    """``sizes`` (a subset of the measured ``grid``) as runs of consecutive measured sizes:
    ``8 B``, ``16-64 B``, ``16-64 B, 1024 B``."""
    index = {m: i for i, m in enumerate(grid)}
    runs: list[list[int]] = []
    for m in sizes:
        if runs and index.get(m, -2) == index.get(runs[-1][-1], -4) + 1:
            runs[-1].append(m)
        else:
            runs.append([m])
    return ", ".join(f"{r[0]} B" if len(r) == 1 else f"{r[0]}-{r[-1]} B" for r in runs)


FALLBACK_NUMBERS: dict[tuple[str, str], dict[str, int]] = {
    ("openmpi", "allreduce"): {"basic_linear": 1, "nonoverlapping": 2, "recursive_doubling": 3,
                               "ring": 4, "segmented_ring": 5, "rabenseifner": 6},
    ("mpich", "allreduce"): {"recursive_doubling": 3},
}
"""The algorithm numbers of what a fallback or a default run ran: Open MPI 4.x/5.x's coll_tuned
allreduce enumeration (``ompi_info --param coll tuned --level 9``) and MPICH 4's
MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM values (3 recursive_doubling)."""


def ran_number(library: str, operation: str, name: str) -> int | None:
    """The number under which ``name`` is forced, for an algorithm a fallback runs."""
    return FALLBACK_NUMBERS.get((library, operation), {}).get(name)
