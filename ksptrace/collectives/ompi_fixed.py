"""What Open MPI's ``tuned`` component runs for an allreduce when nothing is forced.

Without ``coll_tuned_use_dynamic_rules`` the tuned component calls its *fixed decision*
(``ompi_coll_tuned_allreduce_intra_dec_fixed`` in ``ompi/mca/coll/tuned/
coll_tuned_decision_fixed.c``; the same in 4.1.0-4.1.8 and 5.0): a table from the communicator
size and the message size in bytes (``count * type size``) to an algorithm number, always with
segment size 0. The table below holds that decision for commutative operations (every
reduction ksptrace times is a sum) as data: per communicator size below a bound, the message
sizes below which each algorithm applies. The algorithm it names then applies its own
fallbacks (:mod:`ksptrace.collectives.fallbacks`): ``segmented_ring`` with segment size 0 is the
plain ring, and ring with fewer elements than ranks is recursive doubling.

``tests/collectives/test_default_ran.py`` checks the result against summation-order
fingerprints of the forced algorithms under ``mpiexec -n 3`` and ``-n 4``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ksptrace.collectives.fallbacks import openmpi_allreduce

ALLREDUCE_NAMES = {1: "basic_linear", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring",
                   5: "segmented_ring", 6: "rabenseifner"}
"""Open MPI 4.x/5.x's tuned allreduce algorithm numbers (``ompi_info --param coll tuned``)."""

_INF = 1 << 62

ALLREDUCE_COMMUTATIVE: tuple[tuple[int, tuple[tuple[int, int], ...]], ...] = (
    (4, ((8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (_INF, 6))),
    (8, ((16, 4), (8192, 3), (_INF, 6))),
    (16, ((8192, 3), (_INF, 6))),
    (32, ((64, 5), (4096, 3), (_INF, 6))),
    (64, ((128, 5), (_INF, 6))),
    (128, ((262144, 3), (_INF, 6))),
    (256, ((131072, 2), (262144, 3), (_INF, 6))),
    (512, ((4096, 2), (_INF, 6))),
    (2048, ((2048, 2), (16384, 3), (_INF, 6))),
    (4096, ((2048, 2), (4096, 5), (16384, 3), (_INF, 6))),
    (_INF, ((2048, 2), (16384, 5), (32768, 3), (_INF, 6))),
)
"""(communicator size bound, ((message bytes bound, algorithm number), ...)): the first row
whose bound exceeds the communicator size, in it the first entry whose bound exceeds the
message size."""


def fixed_allreduce(total_bytes: int, nprocs: int) -> int:
    """The algorithm number Open MPI's fixed decision picks (commutative operation)."""
    for comm_bound, entries in ALLREDUCE_COMMUTATIVE:
        if nprocs < comm_bound:
            for size_bound, number in entries:
                if total_bytes < size_bound:
                    return number
    raise AssertionError("the last bounds of the table are unbounded")


def default_allreduce_ran(sizes: Sequence[int], nprocs: int) -> dict[int, str]:
    """Message size in bytes -> the algorithm an unforced Open MPI allreduce ran there, with the
    benchmark's element type (float64 where the size is a multiple of 8 bytes, else bytes)."""
    out = {}
    for size in sizes:
        type_bytes = 8 if size % 8 == 0 else 1
        chosen = ALLREDUCE_NAMES[fixed_allreduce(int(size), nprocs)]
        out[int(size)] = openmpi_allreduce(chosen, size // type_bytes, nprocs, type_bytes, 0)
    return out


def fixed_applies(library_version: str, n_nodes: int) -> str | None:
    """None when the table above is the decision of this Open MPI (4.1, and 5.0 on one node:
    5.0's ``han`` component takes multi-node allreduces), else why not."""
    found = re.search(r"Open MPI v(\d+)\.(\d+)", library_version)
    if found is None:
        return f"not an Open MPI version string: {library_version[:40]!r}"
    version = (int(found.group(1)), int(found.group(2)))
    if not (4, 1) <= version < (5, 1):
        return (f"Open MPI {version[0]}.{version[1]}'s fixed decision is not the one ksptrace "
                "holds (4.1-5.0)")
    if version >= (5, 0) and n_nodes > 1:
        return "Open MPI 5's han component decides allreduces across nodes"
    return None
