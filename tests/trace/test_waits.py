"""The wait datasets of a trace (issue 65): written, read back, checked; old traces without
them still read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.trace.read import read_trace
from ksptrace.trace.write import write_trace
from tests.trace.test_io import make_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "trace"


def with_waits(nprocs: int = 3, k: int = 5) -> object:
    trace = make_trace(nprocs, k)
    waits = 0.25 * trace.iteration_seconds
    calls = np.full((nprocs, k), 2, dtype=np.int64)
    return dataclasses.replace(trace, wait_seconds=waits, mpi_calls=calls)


def test_waits_round_trip_with_their_axes(tmp_path: Path) -> None:
    trace = with_waits()
    path = write_trace(trace, tmp_path / "w.h5")
    back = read_trace(path)
    assert back.wait_seconds is not None
    assert back.mpi_calls is not None
    np.testing.assert_array_equal(back.wait_seconds, trace.wait_seconds)
    np.testing.assert_array_equal(back.mpi_calls, trace.mpi_calls)
    assert back.mpi_calls.dtype == np.int64
    with h5py.File(path) as f:
        assert f["wait_seconds"].dims[1].label == "iteration"
        assert f["mpi_calls"].dtype == np.int64


def test_a_trace_without_waits_reads_as_none(tmp_path: Path) -> None:
    path = write_trace(make_trace(), tmp_path / "old.h5")
    with h5py.File(path) as f:
        assert "wait_seconds" not in f
        assert "mpi_calls" not in f
    back = read_trace(path)
    assert back.wait_seconds is None
    assert back.mpi_calls is None
    old = read_trace(DATA / "schema1.h5")  # a trace from before waits existed
    assert old.wait_seconds is None
    assert old.mpi_calls is None


@pytest.mark.parametrize(("change", "message"), [
    ({"mpi_calls": None}, "come together"),
    ({"wait_seconds": np.zeros((3, 4))}, "expected \\(3, 5\\)"),
    ({"wait_seconds": np.full((3, 5), -1.0)}, "negative or non-finite"),
    ({"wait_seconds": np.full((3, 5), np.nan)}, "negative or non-finite"),
    ({"mpi_calls": np.full((3, 5), 1.5)}, "integers"),
    ({"mpi_calls": np.full((3, 5), -1)}, "negative counts"),
])
def test_bad_waits_are_refused(change: dict, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        dataclasses.replace(with_waits(), **change)  # type: ignore[arg-type]


def test_a_file_with_waits_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    path = write_trace(with_waits(), tmp_path / "w.h5")
    with h5py.File(path, "r+") as f:
        del f["mpi_calls"]
        f.create_dataset("mpi_calls", data=np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(TraceError, match="mpi_calls has shape"):
        read_trace(path)


def test_the_wait_share_is_wait_over_iteration_time() -> None:
    from ksptrace.trace.waits import wait_share

    trace = make_trace(2, 4)
    times = trace.iteration_seconds
    waits = np.vstack([0.1 * times[0], 0.6 * times[1]])
    traced = dataclasses.replace(trace, wait_seconds=waits,
                                 mpi_calls=np.array([[2, 2, 3, 2], [2, 2, 3, 2]]))
    share = wait_share(traced)
    assert share is not None
    np.testing.assert_allclose(share.per_rank, [0.1, 0.6])
    expected = (0.1 * times[0].sum() + 0.6 * times[1].sum()) / times.sum()
    assert share.share == pytest.approx(expected)
    assert share.most_waiting_rank == 1
    assert share.reductions_per_iteration == 2
    assert wait_share(trace) is None


def test_the_frames_and_xarray_carry_the_waits() -> None:
    from ksptrace.trace.frame import iterations_frame, summary_row
    from ksptrace.trace.xarray_view import to_xarray

    traced = with_waits(2, 3)
    plain = make_trace(2, 3)
    row = summary_row(traced)
    assert row["wait_share"] == pytest.approx(0.25)
    assert row["reductions_per_iteration"] == 2
    assert "wait_share" not in summary_row(plain)
    df = iterations_frame([traced, plain])
    assert df["wait_seconds"].iloc[:6].tolist() == traced.wait_seconds.reshape(-1).tolist()
    assert df["wait_seconds"].iloc[6:].isna().all()
    pytest.importorskip("xarray")
    ds = to_xarray(traced)
    assert ds.wait_seconds.dims == ("rank", "iteration")
    np.testing.assert_array_equal(ds.mpi_calls.values, traced.mpi_calls)
    assert "wait_seconds" not in to_xarray(plain)


def test_show_prints_the_wait_share(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    path = write_trace(with_waits(), tmp_path / "w.h5")
    out = subprocess.run([sys.executable, "-m", "ksptrace", "show", str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "  wait_share                25.0 %" in out
    assert "most_waiting_rank" in out


def test_the_variance_splits_into_own_work_and_waits_with_known_truth() -> None:
    from ksptrace.trace.waits import variance_split

    rng = np.random.default_rng(7)
    own = rng.uniform(1e-4, 2e-4, size=(4, 20_000))  # variance (1e-4)^2 / 12
    waits = rng.uniform(0.0, 3e-4, size=(4, 20_000))  # (3e-4)^2 / 12: nine times more
    stamps = np.concatenate([np.zeros((4, 1)), np.cumsum(own + waits, axis=1)], axis=1)
    trace = make_trace(4, 20_000)
    traced = dataclasses.replace(trace, stamps=stamps, wait_seconds=waits,
                                 mpi_calls=np.ones((4, 20_000), dtype=np.int64))
    split = variance_split(traced)
    assert split is not None
    assert split.own + split.wait + split.covariance == pytest.approx(1.0)
    assert split.own == pytest.approx(0.1, abs=0.01)  # independent: shares 1 : 9
    assert split.wait == pytest.approx(0.9, abs=0.01)
    assert abs(split.covariance) < 0.02
    assert variance_split(trace) is None


def test_each_solve_of_a_recorded_trace_keeps_its_own_waits() -> None:
    from ksptrace.trace.model import Solves, Trace
    from ksptrace.trace.solves import split

    base = make_trace(2, 7)  # 8 stamps: solves of 2, 2 and 1 iterations (3 + 3 + 2 calls)
    solves = Solves(np.array([0, 3, 6, 8]), np.full((2, 3), 0.1), ("A", "A", "B"),
                    np.array([2, 2, 1]))
    waits = np.arange(10.0).reshape(2, 5) * 1e-6  # iteration columns 0..4
    trace = Trace(base.stamps, base.residual_norms, base.node_ids, base.hostnames,
                  np.full(2, 0.3), base.attrs, solves=solves, wait_seconds=waits,
                  mpi_calls=np.arange(10).reshape(2, 5))
    parts = split(trace)
    assert [p.wait_seconds.tolist() for p in parts if p.wait_seconds is not None] == [
        waits[:, 0:2].tolist(), waits[:, 2:4].tolist(), waits[:, 4:5].tolist()]
    pooled = split(trace, pool=True)
    assert pooled[0].mpi_calls is not None
    assert pooled[0].mpi_calls.tolist() == [[4], [9]]  # the solve of 1 iteration
    assert pooled[1].mpi_calls is not None
    assert pooled[1].mpi_calls.tolist() == [[0, 1, 2, 3], [5, 6, 7, 8]]  # the two of 2
