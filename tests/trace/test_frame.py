from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace.frame import summary_row, traces_to_frame
from ksptrace.trace.read import read_trace
from ksptrace.trace.write import write_trace
from tests.trace.test_io import make_trace


def test_one_row_per_run_with_metadata() -> None:
    traces = [make_trace(nprocs=p, k=4, seed=p) for p in (1, 2, 3)]
    frame = traces_to_frame(traces)
    assert len(frame) == 3
    assert frame["nprocs"].tolist() == [1, 2, 3]
    assert (frame["problem"] == "laplace1d").all()
    t = traces[2].iteration_seconds
    row = frame.iloc[2]
    assert row["sum_max_iteration"] == pytest.approx(t.max(axis=0).sum())
    assert row["mean_iteration"] == pytest.approx(t.mean())
    assert row["rank_spread"] == pytest.approx(np.ptp(t.sum(axis=1)))


def test_summary_orders_standard_and_pipelined_totals() -> None:
    row = summary_row(make_trace(nprocs=4, k=20))
    # sum over k of the max over p is never below the max over p of the sum over k
    assert row["sum_max_iteration"] >= row["max_sum_iteration"]


def test_iterations_frame_has_a_row_per_rank_and_iteration(tmp_path: Path) -> None:
    from ksptrace.trace.frame import ITERATION_COLUMNS, iterations_frame

    traces = [make_trace(nprocs=p, k=4, seed=p) for p in (1, 2, 3)]
    paths = [write_trace(t, tmp_path / f"P{t.nprocs}.h5") for t in traces]
    frame = iterations_frame(read_trace(p) for p in paths)
    assert tuple(frame.columns) == ITERATION_COLUMNS
    assert len(frame) == sum(t.nprocs * t.iterations for t in traces)
    for trace, path in zip(traces, paths, strict=True):
        rows = frame[frame["run"] == path.name]
        assert len(rows) == trace.nprocs * trace.iterations
        table = rows.pivot(index="rank", columns="k", values="seconds").to_numpy()
        np.testing.assert_array_equal(table, trace.iteration_seconds)
        assert rows["node"].tolist() == np.repeat(trace.node_ids, 4).tolist()
        assert rows["host"].tolist() == list(np.repeat(trace.hostnames, 4))
        assert (rows["nprocs"] == trace.nprocs).all()
    assert sorted(frame["k"].unique()) == [1, 2, 3, 4]
    assert (frame["ksp"] == "gmres").all()
    assert (frame["noise"] == "none").all()  # a trace without the attribute: no noise
    assert frame["pc"].isna().all()  # not recorded in these traces


def test_iterations_frame_groups_by_configuration() -> None:
    from ksptrace.trace.frame import iterations_frame
    from ksptrace.trace.synthetic import synthetic_trace

    traces = [synthetic_trace(p, 10, 1, ksp, seed=i)
              for i, (ksp, p) in enumerate([("gmres", 2), ("gmres", 2), ("cg", 4)])]
    frame = iterations_frame(traces, extra=["seed"])
    assert frame["run"].nunique() == 3  # equal labels made unique
    median = frame.groupby(["ksp", "nprocs"])["seconds"].median()
    assert list(median.index) == [("cg", 4), ("gmres", 2)]
    counts = frame.groupby(["ksp", "nprocs"]).size()
    assert counts[("gmres", 2)] == 2 * 2 * 10
    assert counts[("cg", 4)] == 4 * 10
    assert median[("cg", 4)] == pytest.approx(np.median(traces[2].iteration_seconds))
    assert sorted(frame["seed"].unique()) == [0, 1, 2]


def test_iterations_frame_of_nothing_has_the_columns() -> None:
    from ksptrace.trace.frame import ITERATION_COLUMNS, iterations_frame

    assert tuple(iterations_frame([]).columns) == ITERATION_COLUMNS
