"""Many traces as pandas DataFrames: a row per run (metadata and headline timings), or a long
table with a row per run, rank and iteration."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ksptrace.trace import iteration_events
from ksptrace.trace.model import CONFIG_DEFAULTS, Trace
from ksptrace.trace.waits import wait_share

ITERATION_CONFIG: tuple[str, ...] = ("problem", "n", "ksp", "pc", "nprocs", "noise")
"""The configuration columns of :func:`iterations_frame`."""
ITERATION_COLUMNS: tuple[str, ...] = ("run", "rank", "node", "host", "k", "seconds",
                                      *ITERATION_CONFIG)


def summary_row(trace: Trace) -> dict[str, Any]:
    """The headline figures of one run (the columns the demo table prints), and for a trace
    with wait times its wait share: all ranks', the largest rank's and which rank that is, and
    the median of reductions per iteration; with ``--events`` each event's share."""
    t = trace.iteration_seconds
    row = {
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
    waits = wait_share(trace)
    if waits is not None:
        row.update(wait_share=waits.share, wait_share_max=float(waits.per_rank.max()),
                   most_waiting_rank=waits.most_waiting_rank,
                   reductions_per_iteration=waits.reductions_per_iteration)
    if trace.event_seconds is not None:  # --events: each kind's share of the iteration time
        row.update(iteration_events.shares(trace.event_seconds, t))
    return row


def traces_to_frame(traces: Iterable[Trace]) -> pd.DataFrame:
    """One row per run: every attribute plus :func:`summary_row`, and the file path."""
    rows = []
    for trace in traces:
        row: dict[str, Any] = dict(trace.attrs)
        row.update(summary_row(trace))
        row["path"] = trace.path
        rows.append(row)
    return pd.DataFrame(rows)


def _run_name(trace: Trace, used: set[str]) -> str:
    """The file name of ``trace`` (its label if it has no file); the whole path, or the label
    and a number, when an earlier trace already took that name."""
    name = Path(trace.path).name if trace.path else trace.label
    if name in used and trace.path:
        name = str(trace.path)
    base, number = name, 2
    while name in used:
        name, number = f"{base} #{number}", number + 1
    used.add(name)
    return name


def iterations_frame(traces: Iterable[Trace], extra: Sequence[str] = ()) -> pd.DataFrame:
    """The long table of many traces: one row per run, rank and iteration (P * K per trace).

    Columns: ``run`` (the trace's file name, or its label when it was not read from a file;
    made unique), ``rank``, ``node`` (node id), ``host``, ``k`` (1..K), ``seconds`` (T_p^k),
    then the configuration ``problem``, ``n``, ``ksp``, ``pc``, ``nprocs`` and ``noise`` (a
    trace without the attribute gets None; without ``noise``, 'none'), then the attributes
    named in ``extra``; and ``wait_seconds`` and ``mpi_calls`` where any trace has wait times,
    ``matmult_seconds``, ``pcapply_seconds`` and ``vecreduce_seconds`` where any has
    ``--events`` times (NaN for the rows of a trace without). Made for pandas in a notebook::

        df = iterations_frame(read_trace(p) for p in paths)
        df.groupby(["ksp", "nprocs"])["seconds"].median()
    """
    keys = [*ITERATION_CONFIG, *(k for k in extra if k not in ITERATION_COLUMNS)]
    parts: list[pd.DataFrame] = []
    used: set[str] = set()
    for trace in traces:
        nprocs, iterations = trace.nprocs, trace.iterations
        rank = np.repeat(np.arange(nprocs), iterations)
        columns: dict[str, Any] = {
            "run": _run_name(trace, used),
            "rank": rank,
            "node": trace.node_ids[rank],
            "host": np.array(trace.hostnames, dtype=object)[rank],
            "k": np.tile(np.arange(1, iterations + 1), nprocs),
            "seconds": trace.iteration_seconds.reshape(-1),
        }
        if trace.wait_seconds is not None and trace.mpi_calls is not None:
            columns["wait_seconds"] = trace.wait_seconds.reshape(-1)
            columns["mpi_calls"] = trace.mpi_calls.reshape(-1)
        if trace.event_seconds is not None:  # --events: one column per kind
            for j, name in enumerate(iteration_events.EVENTS):
                columns[f"{name.lower()}_seconds"] = trace.event_seconds[:, :, j].reshape(-1)
        for key in keys:
            default = trace.nprocs if key == "nprocs" else CONFIG_DEFAULTS.get(key)
            columns[key] = trace.attrs.get(key, default)
        parts.append(pd.DataFrame(columns))
    if not parts:
        return pd.DataFrame(columns=[*ITERATION_COLUMNS[:6], *keys])
    return pd.concat(parts, ignore_index=True)
