"""The algorithm that ran, per trace and message size, for the tables and maps (issue 32).

A forced algorithm may hand small messages to another one (``algorithm_ran`` in the trace,
from :mod:`ksptrace.collectives.fallbacks`). Comparing "ring" with "recursive_doubling" where
both ran recursive doubling would compare identical code under two names, so the best-algorithm
table, the decision maps and the rules files label each (trace, size) by the algorithm that
ran: the two are merged into one, and a note names each merge. Traces written before
``algorithm_ran`` existed keep their forced name.

Where Open MPI's segmented ring ran, the trace also records how many phases it ran
(``segment_phases``, issue 66): with one phase each block is one piece, the plain ring's steps,
so those sizes are labelled "(1 phase: ran as the plain ring)" and a note names them. Traces
written before ``segment_phases`` existed keep their labels, and a note says "phases not
recorded".
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ksptrace.studies.collectives.labels import label
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


SEGMENTED = "segmented_ring"
ONE_PHASE = "1 phase: ran as the plain ring"
"""What a segmented-ring size that ran in one phase is labelled with."""
NOT_RECORDED = "phases not recorded"
"""What a segmented-ring trace written before ``segment_phases`` existed is noted with."""


def phases_at(t: CollectiveTrace) -> dict[int, int] | None:
    """Message size -> the phases the segmented ring ran there (``segment_phases``; only the
    sizes where it ran), or None when the trace did not record them."""
    raw = t.attrs.get("segment_phases")
    try:
        phases = json.loads(str(raw)) if raw is not None else None
    except ValueError:
        return None
    if not isinstance(phases, dict):
        return None
    out: dict[int, int] = {}
    for size, n in phases.items():
        try:
            out[int(size)] = int(n)
        except (TypeError, ValueError, OverflowError):
            continue
    return out


def phase_marks(t: CollectiveTrace) -> dict[int, str]:
    """Message size -> :data:`ONE_PHASE` where Open MPI's segmented ring ran in one phase, or
    :data:`NOT_RECORDED` at every size where it ran when the trace has no phase counts; empty
    for any other trace."""
    if (t.operation, t.algorithm) != ("allreduce", SEGMENTED) or t.nprocs < 2 \
            or str(t.attrs.get("mpi_flavor", "openmpi")) != "openmpi":
        return {}
    phases = phases_at(t)
    marks: dict[int, str] = {}
    for size, ran in ran_at(t).items():
        if ran != t.algorithm:
            continue
        if phases is None:
            marks[size] = NOT_RECORDED
        elif phases.get(size) == 1:
            marks[size] = ONE_PHASE
    return marks


def phases_column(t: CollectiveTrace) -> list[str]:
    """Per message size, the segmented ring's phases as the curves table shows them: the
    count, :data:`NOT_RECORDED`, or empty where no segmented ring ran."""
    phases, marks = phases_at(t) or {}, phase_marks(t)
    return [NOT_RECORDED if marks.get(m) == NOT_RECORDED else
            str(phases[m]) if m in phases and t.algorithm == SEGMENTED else ""
            for m in ran_at(t)]


def labels(t: CollectiveTrace, forced_label: str) -> list[str]:
    """One label per message size: ``forced_label`` where the forced algorithm ran (with
    "(1 phase: ran as the plain ring)" where a segmented ring ran one phase), else the name of
    the one that ran (with the trace's test-call and timing-mode suffixes, if any)."""
    suffix = "".join("/" + part for part in forced_label.split("/")[1:]
                     if part.startswith(("test", "back-to-back")))
    marks = phase_marks(t)
    return [(forced_label + (f" ({ONE_PHASE})" if marks.get(m) == ONE_PHASE else ""))
            if ran == t.algorithm else ran + suffix for m, ran in ran_at(t).items()]


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
    return out + phase_notes(traces)


def phase_notes(traces: Sequence[CollectiveTrace]) -> list[str]:
    """One line per (operation, P, segmented-ring label, mark): the sizes where it ran in one
    phase, or where its phases were not recorded."""
    found: dict[tuple[str, int, str, str], set[int]] = {}
    grid: dict[tuple[str, int, str], set[int]] = {}
    for t in traces:
        name = label(t)
        grid.setdefault((t.operation, t.nprocs, name), set()).update(
            int(m) for m in t.message_bytes)
        for size, mark in phase_marks(t).items():
            found.setdefault((t.operation, t.nprocs, name, mark), set()).add(size)
    out = []
    for (op, p, name, mark), sizes in sorted(found.items()):
        where = size_runs(sorted(sizes), sorted(grid[(op, p, name)]))
        out.append(f"{op} at P = {p}: the forced {name} ran in 1 phase at {where} (the message "
                   "held P segments and not more than 1.5 P, so each block went as one piece: "
                   f"the plain ring's steps); labelled '({ONE_PHASE})'" if mark == ONE_PHASE
                   else f"{op} at P = {p}: {name} at {where}: {NOT_RECORDED} (a trace written "
                   "before segment_phases existed), so a size where it ran in 1 phase, as the "
                   "plain ring, is not marked")
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
