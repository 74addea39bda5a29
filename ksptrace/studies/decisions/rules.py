"""Open MPI rules files from decision quadtrees over (communicator size, message size).

Open MPI's ``tuned`` collective component reads a "dynamic rules" file when
``coll_tuned_use_dynamic_rules=1`` and ``coll_tuned_dynamic_rules_filename=FILE`` are set. For
one collective it lists communicator sizes, and for each one message sizes (in bytes) with the
algorithm to use from that size on. A call takes the last communicator size not above its own,
and in it the last message size not above its own: the same rule as the quadtree's query (a
value between two measured values follows the lower one). The first communicator size is
written as 1 and the first message size as 0, so values below the measured range use the first
row and column, as the tree does. The file therefore decides exactly like the tree at every
point, which ``decide_with_rules`` lets the tests check, and a test runs Open MPI with a file
built here and sees the algorithm change.

The algorithm numbers come from ``ompi_info --param coll tuned --level 9`` ("Valid values:
0:"ignore", 1:"basic_linear", ..."), parsed by ``parse_ompi_algorithms``; method labels that
are numbers are taken as algorithm numbers directly. A label ``ALGORITHM/segBYTES`` (a
segmented algorithm measured with that segment size, such as ``segmented_ring/seg8192``) writes
that segment size into its rules: without it Open MPI runs ``segmented_ring`` as a plain ring.
A label may end in a note in parentheses (``segmented_ring/seg1024 (1 phase: ran as the plain
ring)``): the note does not change the rule, and the rule's comment names it with the measured
sizes it was seen at.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping

from ksptrace import escape
from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions.quadtree import QuadTree
from ksptrace.trace.ompi import COLLECTIVE_IDS, parse_ompi_algorithms

__all__ = ["COLLECTIVE_IDS", "decide_with_rules", "ompi_rules", "parse_ompi_algorithms",
           "rule_with_segment"]

def _algorithm(label: str, algorithms: Mapping[str, int]) -> tuple[int, int]:
    """The algorithm number and segment size (0: Open MPI's default) of a method label."""
    name, _, seg = _note(label)[0].partition("/seg")
    if seg and not seg.isdigit():
        raise AnalysisError(f"method {label!r}: the segment size after /seg must be a whole "
                            "number of bytes")
    if name.isdigit():
        return int(name), int(seg or 0)
    if name == "default":  # a run that forced nothing: 0 hands the size to Open MPI's own choice
        return 0, 0
    if name in algorithms:
        return algorithms[name], int(seg or 0)
    known = ", ".join(f"{k}={v}" for k, v in sorted(algorithms.items(), key=lambda kv: kv[1]))
    raise AnalysisError(f"method {label!r} is not an Open MPI algorithm name or number; "
                        f"known: {known or 'none'}")


def _note(label: str) -> tuple[str, str]:
    """A method label without its trailing note in parentheses, and the note ("" if none)."""
    if label.endswith(")") and " (" in label:
        base, _, note = label[:-1].partition(" (")
        return base, note
    return label, ""


def _noted(tree: QuadTree, row: int, start: int, stop: float) -> str:
    """The notes of the labels that win at the measured sizes in [start, stop) of ``row``, each
    with its sizes (``; 1 phase: ran as the plain ring at 2048 B``)."""
    seen: dict[str, list[str]] = {}
    for size in tree.axis2:
        if start <= size < stop:
            note = _note(tree.methods[tree.query(float(tree.axis1[row]), float(size))])[1]
            if note:
                seen.setdefault(note, []).append(f"{int(size)} B")
    return escape.comment("".join(f"; {note} at {', '.join(sizes)}"
                                  for note, sizes in seen.items()), limit=400)


def rule_rows(
    tree: QuadTree, algorithms: Mapping[str, int]
) -> list[tuple[int, list[tuple[int, tuple[int, int]]]]]:
    """Per communicator size (the first written as 1): (message size, (algorithm, segment
    size)) from which that choice applies, equal neighbours merged."""
    for name, values in zip(tree.axis_names, (tree.axis1, tree.axis2), strict=True):
        if (values < 0).any() or (values != values.round()).any():
            raise AnalysisError(f"axis {name!r} must hold whole non-negative numbers (process "
                                "counts and message sizes in bytes) for an Open MPI rules file")
    numbers = [_algorithm(m, algorithms) for m in tree.methods]
    rows = []
    for i, comm in enumerate(tree.axis1):
        rules: list[tuple[int, tuple[int, int]]] = []
        for j, size in enumerate(tree.axis2):
            alg = numbers[tree.query(float(comm), float(size))]
            if not rules or rules[-1][1] != alg:
                rules.append((0 if j == 0 else int(size), alg))
        rows.append((1 if i == 0 else int(comm), rules))
    return rows


def ompi_rules(tree: QuadTree, collective: str, algorithms: Mapping[str, int]) -> str:
    """The rules file (Open MPI's first format, read by 4.x and 5.x) deciding like ``tree``."""
    if collective not in COLLECTIVE_IDS:
        raise AnalysisError(f"unknown collective {collective!r}; one of "
                            f"{', '.join(COLLECTIVE_IDS)}")
    rows = rule_rows(tree, algorithms)
    out = ["1 # number of collectives",
           f"{COLLECTIVE_IDS[collective]} # collective: {collective}",
           f"{len(rows)} # number of communicator sizes"]
    for row, (comm, rules) in enumerate(rows):
        out.append(f"{comm} # communicator size")
        out.append(f"{len(rules)} # number of message sizes")
        stops = [float(size) for size, _ in rules[1:]] + [float("inf")]
        out.extend(f"{size} {alg} 0 {seg} # from {size} bytes: algorithm {alg}, topology "
                   + (f"default, segments of {seg} bytes" if seg else
                      "and segment size default") + _noted(tree, row, size, stop)
                   for (size, (alg, seg)), stop in zip(rules, stops, strict=True))
    return "\n".join(out) + "\n"


def decide_with_rules(text: str, comm_size: int, message_bytes: int) -> int | None:
    """The algorithm a rules file written by ``ompi_rules`` gives (None: no rule applies)."""
    found = rule_with_segment(text, comm_size, message_bytes)
    return None if found is None else found[0]


def rule_with_segment(text: str, comm_size: int, message_bytes: int
                      ) -> tuple[int, int] | None:
    """The algorithm and segment size a rules file written by ``ompi_rules`` gives (None: no
    rule applies)."""
    tokens = [line.split("#", 1)[0].split() for line in text.splitlines()]
    fields = [t for t in tokens if t]
    pos = 2
    n_comms = int(fields[pos][0])
    pos += 1
    comms: list[int] = []
    tables: list[tuple[list[int], list[tuple[int, int]]]] = []
    for _ in range(n_comms):
        comms.append(int(fields[pos][0]))
        count = int(fields[pos + 1][0])
        rules = fields[pos + 2:pos + 2 + count]
        tables.append(([int(r[0]) for r in rules],
                       [(int(r[1]), int(r[3]) if len(r) > 3 else 0) for r in rules]))
        pos += 2 + count
    c = bisect_right(comms, comm_size) - 1
    if c < 0:
        return None
    sizes, algs = tables[c]
    m = bisect_right(sizes, message_bytes) - 1
    return None if m < 0 else algs[m]
