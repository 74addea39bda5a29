"""``--events``' per-iteration sums (pure), their place in a trace, in ``show``'s summary and in
the timeline, against hand-worked values."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.trace import iteration_events
from ksptrace.trace.frame import summary_row
from ksptrace.trace.io import read_trace
from ksptrace.trace.timeline import events, write_timeline
from ksptrace.trace.write import write_trace
from tests.trace.test_timeline import check_format, traced


def test_spans_are_summed_into_the_iteration_their_start_falls_in() -> None:
    stamps = np.array([10.0, 11.0, 12.0, 13.0])
    spans = np.array([
        [9.5, 9.9, 0],     # before the first stamp (set-up): left out
        [10.1, 10.3, 0],   # iteration 1: MatMult 0.2
        [10.4, 10.5, 1],   # iteration 1: PCApply 0.1
        [10.6, 10.9, 2],   # iteration 1: reductions 0.3
        [11.2, 11.6, 0],   # iteration 2: MatMult 0.4
        [11.7, 11.8, 0],   # iteration 2: MatMult 0.1 more
        [12.5, 12.75, 2],  # iteration 3: reductions 0.25
        [13.5, 13.6, 1],   # after the last stamp: left out
    ])
    got = iteration_events.per_iteration(stamps, spans)
    np.testing.assert_allclose(got, [[0.2, 0.1, 0.3], [0.5, 0.0, 0.0], [0.0, 0.0, 0.25]])


def test_spans_between_two_solves_are_left_out() -> None:
    # solve 0: stamps 0, 1, 2; solve 1: stamps 5, 6 (the gap 2..5 is no iteration)
    stamps = np.array([0.0, 1.0, 2.0, 5.0, 6.0])
    spans = np.array([[0.5, 0.75, 0], [1.5, 1.75, 1], [3.0, 4.0, 0], [5.5, 5.625, 2]])
    got = iteration_events.per_iteration(stamps, spans, np.array([0, 3, 5]))
    np.testing.assert_allclose(got, [[0.25, 0, 0], [0, 0.25, 0], [0, 0, 0.125]])
    assert iteration_events.per_iteration(stamps, np.zeros((0, 3)), np.array([0, 3, 5])).shape \
        == (3, 3)


def test_a_trace_refuses_event_times_of_the_wrong_shape_or_sign() -> None:
    trace = traced(2, 4)
    with pytest.raises(TraceError, match="event_seconds has shape"):
        dataclasses.replace(trace, event_seconds=np.zeros((2, 4)))
    with pytest.raises(TraceError, match="negative or non-finite"):
        dataclasses.replace(trace, event_seconds=np.full((2, 4, 3), -1.0))


def _with_events(nprocs: int = 3, k: int = 6, scale: float = 0.3) -> tuple:
    trace = traced(nprocs, k)
    rng = np.random.default_rng(2)
    seconds = trace.iteration_seconds[:, :, None] * rng.uniform(0.0, scale, (nprocs, k, 3))
    return dataclasses.replace(trace, event_seconds=seconds), seconds


def test_event_times_round_trip_and_old_traces_have_none(tmp_path: Path) -> None:
    trace, seconds = _with_events()
    back = read_trace(write_trace(trace, tmp_path / "e.h5"))
    assert back.event_seconds is not None
    np.testing.assert_array_equal(back.event_seconds, seconds)
    plain = read_trace(write_trace(traced(), tmp_path / "p.h5"))
    assert plain.event_seconds is None


def test_show_prints_each_events_share_of_the_iteration_time() -> None:
    trace, seconds = _with_events()
    row = summary_row(trace)
    total = trace.iteration_seconds.sum()
    for j, name in enumerate(iteration_events.EVENTS):
        assert row[iteration_events.SHARE_KEYS[name]] == pytest.approx(seconds[..., j].sum()
                                                                       / total)
    assert "matmult_share" not in summary_row(traced())


@pytest.mark.parametrize("scale", [0.3, 0.9])  # 0.9: totals longer than the iteration
def test_the_timeline_nests_the_event_slices_in_their_iteration(tmp_path: Path,
                                                                 scale: float) -> None:
    trace, seconds = _with_events(scale=scale)
    src = write_trace(trace, tmp_path / "t.h5")
    write_timeline(src, tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    tracks = check_format(doc)  # every slice nests, the cut ones too
    assert doc["otherData"]["event_slices"] == events.EVENT_PLACEMENT
    for (_, rank), slices in tracks.items():
        its = {e["args"]["k"]: e for e in slices if e["name"].startswith("iteration ")}
        for j, name in enumerate(events.EVENT_NAMES):
            drawn = [e for e in slices if e["name"] == name]
            assert [e["args"]["k"] for e in drawn] == list(range(1, trace.iterations + 1))
            np.testing.assert_allclose([e["args"]["total_us"] for e in drawn],
                                       seconds[rank, :, j] * 1e6, atol=1e-3)
            for e in drawn:
                it = its[e["args"]["k"]]
                assert it["ts"] - 2e-3 <= e["ts"] <= e["ts"] + e["dur"] <= it["ts"] + it["dur"] \
                    + 2e-3
                assert e["dur"] <= e["args"]["total_us"] + 2e-3  # cut, never stretched
                if j == 2 and scale < 0.33:  # the reductions, ending the iteration, fit whole
                    assert e["dur"] == pytest.approx(e["args"]["total_us"], abs=2e-3)


def test_xarray_names_the_event_axis() -> None:
    pytest.importorskip("xarray")
    from ksptrace.trace import to_xarray

    trace, seconds = _with_events()
    ds = to_xarray(trace)
    assert list(ds["event"].values) == list(iteration_events.EVENTS)
    np.testing.assert_array_equal(ds["event_seconds"].sel(event="PCApply").values,
                                  seconds[..., 1])


def test_the_long_table_has_a_column_per_kind() -> None:
    from ksptrace.trace.frame import iterations_frame

    trace, seconds = _with_events(2, 4)
    df = iterations_frame([trace, traced(2, 4)])
    mine = df[df["run"] == df["run"].iloc[0]]
    np.testing.assert_array_equal(mine["pcapply_seconds"], seconds[:, :, 1].reshape(-1))
    assert df["matmult_seconds"].iloc[8:].isna().all()  # the trace without events
