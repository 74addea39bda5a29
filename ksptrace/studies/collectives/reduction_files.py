"""The file side of the reductions table
(:func:`ksptrace.studies.collectives.reductions.reductions_table`): which solver traces to
read, and the allreduce times at each P."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ksptrace.errors import KsptraceError
from ksptrace.studies.collectives.reductions import SolverReductions, reductions_table
from ksptrace.studies.table import Table
from ksptrace.trace.collectives import CollectiveTrace
from ksptrace.trace.read import attrs_of, read_trace


def reductions_of_files(solver_paths: Sequence[str | os.PathLike[str]],
                        traces: Sequence[CollectiveTrace], message_bytes: int = 8) -> Table:
    """The reductions table of the solver trace files against the default-algorithm allreduce
    traces at their P. Only a trace with reduction counts at such a P is read whole; one that
    cannot be read is left out (the solver report names it)."""
    allreduce: dict[int, np.ndarray] = {}
    for t in traces:
        if (t.operation == "allreduce" and t.algorithm == "default"
                and message_bytes in list(t.message_bytes)):
            j = list(t.message_bytes).index(message_bytes)
            allreduce.setdefault(t.nprocs, t.call_seconds()[j])
    solvers = []
    for p in solver_paths:
        try:
            attrs = attrs_of(p)
            nprocs = int(str(attrs.get("nprocs", 0)))
            times = np.empty((0, 0))
            if "reductions_blocking" in attrs and nprocs in allreduce:
                times = read_trace(p).iteration_seconds
        except (OSError, KsptraceError):
            continue
        solvers.append(SolverReductions(Path(p).name, str(attrs.get("ksp", "")), nprocs,
                                        attrs, times))
    return reductions_table(solvers, allreduce, message_bytes)
