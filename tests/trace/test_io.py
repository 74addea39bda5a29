"""Trace files round-trip, refuse to clobber, and name the fault when they are bad."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from ksptrace.errors import TraceError, UsageError
from ksptrace.trace.checks import check_finite, schema_version_of
from ksptrace.trace.model import ONE_SOLVE_SCHEMA, SCHEMA_VERSION, Trace
from ksptrace.trace.read import read_trace
from ksptrace.trace.write import write_trace


def make_trace(nprocs: int = 3, k: int = 5, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    stamps = np.cumsum(rng.uniform(1e-4, 2e-4, size=(nprocs, k + 1)), axis=1)
    return Trace(
        stamps=stamps,
        residual_norms=np.geomspace(1.0, 1e-3, k + 1),
        node_ids=np.arange(nprocs) // 2,
        hostnames=tuple(f"node{i // 2}" for i in range(nprocs)),
        solve_seconds=stamps[:, -1] - stamps[:, 0] + 1e-5,
        attrs={"problem": "laplace1d", "n": 100, "ksp": "gmres", "oversubscribed": False,
               "solve_max": 1.5, "command_line": "ksptrace run --n 100"},
    )


def test_round_trip(tmp_path: Path) -> None:
    trace = make_trace()
    path = write_trace(trace, tmp_path / "t.h5")
    back = read_trace(path)
    np.testing.assert_array_equal(back.stamps, trace.stamps)
    np.testing.assert_array_equal(back.iteration_seconds, trace.iteration_seconds)
    np.testing.assert_array_equal(back.residual_norms, trace.residual_norms)
    np.testing.assert_array_equal(back.node_ids, trace.node_ids)
    np.testing.assert_array_equal(back.solve_seconds, trace.solve_seconds)
    assert back.hostnames == trace.hostnames
    for key, value in trace.attrs.items():
        assert back.attrs[key] == value
        assert type(back.attrs[key]) is type(value)
    assert back.attrs["schema_version"] == ONE_SOLVE_SCHEMA  # one solve: schema 2 is enough
    assert back.ranks_per_node == 2
    assert back.n_nodes == 2
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["iteration_seconds"][...], np.diff(trace.stamps, axis=1))


def test_existing_file_is_refused_unless_overwrite(tmp_path: Path) -> None:
    path = write_trace(make_trace(seed=1), tmp_path / "t.h5")
    with pytest.raises(UsageError, match="--overwrite"):
        write_trace(make_trace(seed=2), path)
    assert read_trace(path).stamps[0, 1] == make_trace(seed=1).stamps[0, 1]
    write_trace(make_trace(seed=2), path, overwrite=True)
    assert read_trace(path).stamps[0, 1] == make_trace(seed=2).stamps[0, 1]
    assert [p.name for p in tmp_path.iterdir()] == ["t.h5"]  # no temporary left behind


def test_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        write_trace(make_trace(), tmp_path / "nope" / "t.h5")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("truncate", "not a readable HDF5"),
        ("garbage", "not a readable HDF5"),
        ("newer", "newer than this ksptrace"),
        ("nodataset", "missing datasets"),
        ("noschema", "not a ksptrace trace"),
    ],
)
def test_bad_files_are_named(tmp_path: Path, damage: str, message: str) -> None:
    path = write_trace(make_trace(), tmp_path / "t.h5")
    if damage == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        path.write_bytes(b"not hdf5 at all" * 100)
    else:
        with h5py.File(path, "a") as f:
            if damage == "newer":
                f.attrs["schema_version"] = SCHEMA_VERSION + 1
            elif damage == "nodataset":
                del f["stamps"]
            else:
                del f.attrs["schema_version"]
    with pytest.raises(TraceError, match=message) as info:
        read_trace(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "absent.h5")


def test_non_finite_timings_are_flagged() -> None:
    trace = make_trace()
    stamps = trace.stamps.copy()
    stamps[1, 3] = np.nan
    bad = Trace(stamps, trace.residual_norms, trace.node_ids, trace.hostnames,
                trace.solve_seconds, trace.attrs)
    with pytest.raises(TraceError, match="NaN or inf"):
        check_finite(bad)
    check_finite(trace)


def test_model_rejects_inconsistent_shapes() -> None:
    trace = make_trace()
    with pytest.raises(TraceError, match="node_ids"):
        Trace(trace.stamps, trace.residual_norms, trace.node_ids[:-1], trace.hostnames,
              trace.solve_seconds)
    with pytest.raises(TraceError, match="no iteration"):
        Trace(trace.stamps[:, :1], trace.residual_norms[:1], trace.node_ids, trace.hostnames,
              trace.solve_seconds)


def test_failed_publish_is_one_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename that fails (here: no space for the directory entry) is one OutputError line,
    and neither the temporary file nor the trace is left."""
    import errno
    import os

    from ksptrace.errors import OutputError

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", full)
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OutputError, match=f"no space left on {tmp_path} for the trace"):
        write_trace(make_trace(), tmp_path / "t.h5")
    assert list(tmp_path.iterdir()) == []


def test_a_compressed_trace_is_still_read(tmp_path: Path) -> None:
    """The size check refuses shapes the file cannot hold, not honest compressed files."""
    plain = write_trace(make_trace(nprocs=4, k=400), tmp_path / "plain.h5")
    packed = tmp_path / "packed.h5"
    with h5py.File(plain) as src, h5py.File(packed, "w") as dst:
        for key, value in src.attrs.items():
            dst.attrs[key] = value
        for name, obj in src.items():
            if isinstance(obj, h5py.Group):  # an attribute group (schema 2)
                group = dst.create_group(name)
                for key, value in obj.attrs.items():
                    group.attrs[key] = value
                continue
            dst.create_dataset(name, data=obj[...], compression="gzip", compression_opts=9,
                               shuffle=True)
    back = read_trace(packed)
    np.testing.assert_array_equal(back.stamps, read_trace(plain).stamps)


@pytest.mark.parametrize("value", [1, np.int64(1), np.uint8(1), np.array(1)])
def test_schema_version_accepts_a_positive_integer(value: object) -> None:
    assert schema_version_of(value) == 1


@pytest.mark.parametrize(
    "value", [0, -1, True, np.bool_(True), 1.0, np.inf, 1 + 0j, b"1", "1", np.array([1])]
)
def test_schema_version_refuses_anything_else(value: object) -> None:
    with pytest.raises(TraceError, match="not a positive integer"):
        schema_version_of(value)


def _ends_in_read_only_buffer(a: object) -> bool:
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return isinstance(a, memoryview) and a.readonly


def test_a_read_trace_is_a_read_only_view_of_what_the_reader_read(tmp_path: Path) -> None:
    """The forked reader reads the datasets into shared memory; the trace does not copy them
    again (a 41 M-value trace would otherwise cost twice its size)."""
    trace = make_trace(nprocs=8, k=300)
    back = read_trace(write_trace(trace, tmp_path / "t.h5"))
    for name in ("stamps", "residual_norms", "solve_seconds"):
        array = getattr(back, name)
        assert not array.flags.owndata, name
        assert _ends_in_read_only_buffer(array), name
        np.testing.assert_array_equal(array, getattr(trace, name))
    with pytest.raises(ValueError, match="read-only"):
        back.stamps[0, 0] = 1.0


def _only_in_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any read of a trace file in this (the parent) process fail the test."""
    from ksptrace.trace import shared_read

    parent, real = os.getpid(), shared_read.read_fields

    def read_fields(*args: Any) -> Any:
        assert os.getpid() != parent, "the parent read a foreign file"
        return real(*args)

    monkeypatch.setattr(shared_read, "read_fields", read_fields)
    monkeypatch.setattr("ksptrace.trace.fields.read_fields", read_fields)


def test_a_trace_the_shared_map_cannot_hold_is_read_by_a_second_child_never_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 50: a compressed trace (30 MiB) overflowed the map sized from the file and was
    read again by the parent, out of the crash isolation's reach."""
    from ksptrace.trace import shared_read

    trace = make_trace(nprocs=8, k=300)
    path = write_trace(trace, tmp_path / "t.h5")
    shared = read_trace(path)
    _only_in_a_child(monkeypatch)
    monkeypatch.setattr(shared_read, "_map_bytes", lambda file_bytes: 4096)
    back = read_trace(path)
    assert not back.stamps.flags.owndata  # handed over by the second child
    np.testing.assert_array_equal(back.stamps, trace.stamps)
    np.testing.assert_array_equal(back.node_ids, shared.node_ids)
    assert back.hostnames == shared.hostnames
    assert dict(back.attrs) == dict(shared.attrs)


def test_a_fault_of_the_child_refuses_the_file_and_the_parent_never_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ksptrace.trace import shared_read

    path = write_trace(make_trace(nprocs=2, k=20), tmp_path / "t.h5")

    def broken(*args: Any) -> Any:
        raise RuntimeError("a fault nobody expected")

    _only_in_a_child(monkeypatch)
    monkeypatch.setattr(shared_read, "read_fields", broken)
    with pytest.raises(TraceError, match=r"unreadable \(a fault nobody expected\)") as info:
        read_trace(path)
    assert str(info.value).startswith(f"{path}: ")


def test_a_trace_copies_arrays_anyone_could_still_change() -> None:
    stamps = np.cumsum(np.full((2, 4), 1e-3), axis=1)
    view = stamps.view()
    view.setflags(write=False)  # read-only, but its base is not
    trace = Trace(stamps=view, residual_norms=np.ones(4), node_ids=np.zeros(2, dtype=int),
                  hostnames=("a", "a"), solve_seconds=np.full(2, 0.01), attrs={})
    stamps[0, 0] = 99.0
    assert trace.stamps[0, 0] == 1e-3
    assert not trace.stamps.flags.writeable
