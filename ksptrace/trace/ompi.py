"""Open MPI's vocabulary for collectives: their numbers, and the names and numbers of the tuned
component's algorithms as ``ompi_info`` lists them.

Shared by the benchmark runner (which forces an algorithm) and the decisions study (which
writes rules files); it depends on neither.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ksptrace.errors import AnalysisError

COLLECTIVE_IDS: Mapping[str, int] = {
    "allgather": 0, "allgatherv": 1, "allreduce": 2, "alltoall": 3, "alltoallv": 4,
    "alltoallw": 5, "barrier": 6, "bcast": 7, "exscan": 8, "gather": 9, "gatherv": 10,
    "reduce": 11, "reduce_scatter": 12, "reduce_scatter_block": 13, "scan": 14, "scatter": 15,
    "scatterv": 16,
}
"""Open MPI's collective numbers (``COLLTYPE`` in coll_base_functions.h, 4.x and 5.x)."""

_VALID = re.compile(r'(\d+):"([^"]+)"')


def parse_ompi_algorithms(ompi_info: str, collective: str) -> dict[str, int]:
    """Algorithm name -> number for ``collective`` from ``ompi_info --param coll tuned
    --level 9`` output (the "Valid values" line of ``coll_tuned_<collective>_algorithm``)."""
    key = f'"coll_tuned_{collective}_algorithm"'
    lines = ompi_info.splitlines()
    for i, line in enumerate(lines):
        if key in line:
            for follow in lines[i + 1:i + 4]:
                if "Valid values:" in follow:
                    return {name: int(num) for num, name in _VALID.findall(follow)}
    raise AnalysisError(f"ompi_info lists no algorithms for {collective!r} (looked for "
                        f"coll_tuned_{collective}_algorithm); is this Open MPI with the tuned "
                        "component?")
