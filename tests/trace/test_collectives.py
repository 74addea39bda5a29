"""Collectives traces: round trip, atomic write, refusal of other files."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.errors import TraceError, UsageError
from ksptrace.trace import collectives as ctrace
from ksptrace.trace.synthetic import synthetic_trace


def _trace(overlap: bool = False) -> ctrace.CollectiveTrace:
    rng = np.random.default_rng(1)
    s = rng.uniform(1e-6, 1e-3, (3, 4, 5))
    return ctrace.CollectiveTrace(
        seconds=s, message_bytes=np.array([1, 2, 4, 8]), node_ids=np.zeros(3, np.int64),
        hostnames=("a", "a", "é" * 40), attrs={"operation": "allreduce", "nprocs": 3,
                                              "algorithm_name": "ring", "run_id": "x1"},
        comm_seconds=s * 0.5 if overlap else None, compute_seconds=s * 0.6 if overlap else None)


@pytest.mark.parametrize("overlap", [False, True])
def test_round_trip(tmp_path: Path, overlap: bool) -> None:
    t = _trace(overlap)
    path = ctrace.write(t, tmp_path / "c.h5")
    back = ctrace.read(path)
    np.testing.assert_array_equal(back.seconds, t.seconds)
    np.testing.assert_array_equal(back.message_bytes, t.message_bytes)
    assert back.hostnames == ("a", "a", "é" * 32)  # cut to 64 UTF-8 bytes, as solver traces
    assert back.attrs["operation"] == "allreduce"
    assert back.attrs["kind"] == "collectives"
    assert back.algorithm == "ring"
    assert back.nprocs == 3
    assert back.repetitions == 5
    if overlap:
        np.testing.assert_array_equal(back.comm_seconds, t.comm_seconds)
    with h5py.File(path) as f:  # schema-2 layout: groups, dimension scales
        assert f["run"].attrs["operation"] == "allreduce"
        assert f["layout"].attrs["nprocs"] == 3
        assert f["provenance"].attrs["run_id"] == "x1"
        assert [d.label for d in f["seconds"].dims] == ["rank", "message_bytes", "repetition"]
    assert [p.name for p in tmp_path.iterdir()] == ["c.h5"]  # no temporary file left
    assert ctrace.is_collectives(path)
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert ds["seconds"].dims == ("rank", "message_bytes", "repetition")
    assert list(ds["message_bytes"].values) == [1, 2, 4, 8]
    assert str(ds["hostnames"].values[0]) == "a"
    ds.close()
    np.testing.assert_array_equal(back.call_seconds(), t.seconds.max(axis=0))


def test_refuses_existing_and_solver_traces(tmp_path: Path) -> None:
    path = ctrace.write(_trace(), tmp_path / "c.h5")
    with pytest.raises(UsageError, match="already exists"):
        ctrace.write(_trace(), path)
    solver = tmp_path / "s.h5"
    from ksptrace.trace.io import write_trace

    write_trace(synthetic_trace(nprocs=2, iterations=5, seed=0), solver)
    assert not ctrace.is_collectives(solver)
    with pytest.raises(TraceError, match="is not a collectives trace"):
        ctrace.read(solver)


def test_shape_checked() -> None:
    with pytest.raises(TraceError, match=r"seconds must be \[P, M, R\]"):
        ctrace.CollectiveTrace(np.ones((2, 3)), np.arange(3), np.zeros(2), ("a", "b"))


def test_corrupt_files_are_one_error(tmp_path: Path) -> None:
    path = ctrace.write(_trace(), tmp_path / "c.h5")
    with h5py.File(path, "r+") as f:
        del f["seconds"]
        f.create_dataset("seconds", shape=(3, 4, 10**9), dtype="f8", chunks=(1, 1, 1024))
    with pytest.raises(TraceError, match="far more data than the file holds"):
        ctrace.read(path)
    trunc = tmp_path / "t.h5"
    trunc.write_bytes(ctrace.write(_trace(), tmp_path / "d.h5").read_bytes()[:2000])
    with pytest.raises(TraceError, match="cannot read"):
        ctrace.read(trunc)
    with h5py.File(path, "r+") as f:
        del f["seconds"]
    with pytest.raises(TraceError, match="cannot read"):
        ctrace.read(path)


def _mixed_files(tmp_path: Path) -> list[Path]:
    from ksptrace.trace.io import write_trace

    coll = ctrace.write(_trace(), tmp_path / "c.h5")
    solver = tmp_path / "s.h5"
    write_trace(synthetic_trace(nprocs=2, iterations=5, seed=0), solver)
    text = tmp_path / "t.h5"
    text.write_text("not HDF5")
    folder = tmp_path / "d.h5"
    folder.mkdir()
    return [solver, coll, text, tmp_path / "missing.h5", folder, coll]


def test_one_child_classifies_many_files_as_one_child_each_would(tmp_path: Path) -> None:
    paths = _mixed_files(tmp_path)
    assert ctrace.collectives_flags(paths) == [ctrace.is_collectives(p) for p in paths]
    assert ctrace.collectives_flags(paths) == [False, True, False, False, False, True]
    assert ctrace.collectives_flags([]) == []


def test_a_file_that_crashes_the_shared_child_is_classified_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    paths = _mixed_files(tmp_path)
    original = ctrace._is_collectives
    forks: list[int] = []

    def crashing(p: Path) -> bool:
        if p == paths[0]:
            os.abort()  # what libhdf5 does with some damaged files, here in the child
        return original(p)

    real_fork = os.fork

    def counted_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(ctrace, "_is_collectives", crashing)
    monkeypatch.setattr(os, "fork", counted_fork)
    assert ctrace.collectives_flags(paths) == [False, True, False, False, False, True]
    assert len(forks) == 1 + 4  # the shared child, then one per regular file
    forks.clear()
    monkeypatch.setattr(ctrace, "_is_collectives", original)
    assert ctrace.collectives_flags(paths) == [False, True, False, False, False, True]
    assert len(forks) == 1
