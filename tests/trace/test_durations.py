"""The child that reads a large trace also works out its iteration times, in the shared map:
the same bits as ``np.diff`` in the parent, read-only, and only where they mean the same."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace import shared_read
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.trace.test_solves import several


def _read(path: Path) -> Trace:
    return shared_read.read_in_child(path, path.stat().st_size)


def test_a_trace_of_one_solve_comes_with_its_iteration_times(tmp_path: Path) -> None:
    path = write_trace(synthetic_trace(16, 300, 4, seed=2), tmp_path / "t.h5")
    trace = _read(path)
    t = trace.iteration_seconds
    assert not t.flags.writeable
    assert t.tobytes() == np.diff(np.asarray(trace.stamps), axis=1).tobytes()
    assert trace.timing_fault() is None


def test_a_trace_of_several_solves_drops_its_gaps_in_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[object] = []
    real = shared_read.make_trace

    def make_trace(p: Path, values: dict[str, object], durations: object = None) -> Trace:
        handed.append(durations)
        return real(p, values, durations)  # type: ignore[arg-type]

    monkeypatch.setattr(shared_read, "make_trace", make_trace)
    made = several()
    trace = _read(write_trace(made, tmp_path / "several.h5"))
    assert handed == [None]  # nothing from the child: the parent drops the gaps
    np.testing.assert_array_equal(trace.iteration_seconds, made.iteration_seconds)
    one = _read(write_trace(synthetic_trace(2, 20, 1, seed=1), tmp_path / "one.h5"))
    assert handed[1] is one.iteration_seconds  # and for one solve, the child's array itself


def _stamps(dtype: type) -> dict[str, object]:
    return {"solves": None, "stamps": np.cumsum(np.ones((3, 9), dtype=dtype), axis=1)}


def test_no_durations_from_float32_stamps_and_a_full_map_counts_them() -> None:
    shared = mmap.mmap(-1, 1 << 16)
    assert shared_read._durations(_stamps(np.float32), shared_read._Carver(shared)) is None
    done = shared_read._durations(_stamps(np.float64), shared_read._Carver(shared))
    assert done is not None
    assert done.shape == (3, 8)
    np.testing.assert_array_equal(done, np.ones((3, 8)))
    big = {"solves": None, "stamps": np.zeros((3, 1 << 13))}  # 3 x 8192 x 8 B: no room
    carver = shared_read._Carver(shared)
    assert shared_read._durations(big, carver) is not None  # in private memory, and counted:
    assert carver.full
    assert carver.end > len(shared)


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_inf_and_nan_stamps_are_still_refused_the_same_way(tmp_path: Path, value: float) -> None:
    made = synthetic_trace(4, 30, 2, seed=3)
    stamps = np.array(made.stamps)
    stamps[1, 7] = value
    path = write_trace(Trace(stamps, made.residual_norms, made.node_ids, made.hostnames,
                             made.solve_seconds, made.attrs), tmp_path / "bad.h5")
    with pytest.raises(Exception, match="NaN or inf"):
        _read(path)
