from __future__ import annotations

import numpy as np
import pytest

from ksptrace.trace.frame import summary_row, traces_to_frame
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
