"""Many traces as one pandas DataFrame: a row per run, its metadata and headline timings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ksptrace.trace.model import Trace


def summary_row(trace: Trace) -> dict[str, Any]:
    """The headline figures of one run (the columns the demo table prints)."""
    t = trace.iteration_seconds
    return {
        "nprocs": trace.nprocs,
        "iterations": trace.iterations,
        "solve_max": trace.solve_max,
        "solve_min": float(trace.solve_seconds.min()),
        "solve_mean": float(trace.solve_seconds.mean()),
        "sum_max_iteration": float(t.max(axis=0).sum()),
        "max_sum_iteration": float(t.sum(axis=1).max()),
        "mean_iteration": float(t.mean()),
        "rank_spread": float(np.ptp(t.sum(axis=1))),
        "n_nodes": trace.n_nodes,
        "ranks_per_node": trace.ranks_per_node,
    }


def traces_to_frame(traces: Iterable[Trace]) -> pd.DataFrame:
    """One row per run: every attribute plus :func:`summary_row`, and the file path."""
    rows = []
    for trace in traces:
        row: dict[str, Any] = dict(trace.attrs)
        row.update(summary_row(trace))
        row["path"] = trace.path
        rows.append(row)
    return pd.DataFrame(rows)
