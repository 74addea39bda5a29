"""Traces in xarray: a trace file opens with named dimensions, and ``to_xarray`` labels a Trace
the same way; without xarray, ``to_xarray`` says how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import EnvironmentProblem
from ksptrace.trace import to_xarray
from ksptrace.trace.model import Trace
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.trace.schema1 import FIXTURE


def noisy_trace(nprocs: int = 4, k: int = 7) -> Trace:
    base = synthetic_trace(nprocs, k, 2, "gmres", seed=3)
    return Trace(base.stamps, base.residual_norms, base.node_ids, base.hostnames,
                 base.solve_seconds, {**base.attrs, "noise": "x"},
                 injected_seconds=np.full((nprocs, k), 1e-6))


def test_a_trace_file_opens_with_named_dimensions(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    trace = noisy_trace()
    path = write_trace(trace, tmp_path / "t.h5")
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        assert dict(ds.sizes) == {"rank": 4, "iteration": 7, "stamp": 8}
        assert not [d for d in ds.dims if str(d).startswith("phony_dim")]
        assert ds["iteration_seconds"].dims == ("rank", "iteration")
        assert ds["injected_seconds"].dims == ("rank", "iteration")
        assert ds["stamps"].dims == ("rank", "stamp")
        assert ds["residual_norms"].dims == ("stamp",)
        for name in ("node_ids", "hostnames", "solve_seconds"):
            assert ds[name].dims == ("rank",)
        assert ds["iteration"].values.tolist() == list(range(1, 8))
        assert ds["hostnames"].values.tolist() == list(trace.hostnames)  # text, not bytes
        np.testing.assert_allclose(ds["iteration_seconds"].values, trace.iteration_seconds)
        assert ds.attrs["schema_version"] == 2
    with xr.open_dataset(path, engine="h5netcdf", group="run") as run:
        assert run.attrs["ksp"] == "gmres"


def test_to_xarray_labels_the_trace() -> None:
    pytest.importorskip("xarray")
    trace = noisy_trace()
    ds = to_xarray(trace)
    assert ds["iteration_seconds"].dims == ("rank", "iteration")
    assert dict(ds.sizes) == {"rank": 4, "iteration": 7, "stamp": 8}
    assert ds["node"].dims == ("rank",)
    assert ds["node"].values.tolist() == trace.node_ids.tolist()
    assert ds["host"].values.tolist() == list(trace.hostnames)
    assert ds["iteration"].values.tolist() == list(range(1, 8))
    assert ds["iteration_seconds"].attrs["units"] == "s"
    np.testing.assert_array_equal(ds["iteration_seconds"].values, trace.iteration_seconds)
    np.testing.assert_array_equal(ds["injected_seconds"].values, trace.injected_seconds)
    assert ds.attrs["ksp"] == "gmres"
    per_node = ds["iteration_seconds"].groupby("node").mean(...)
    assert per_node.sizes == {"node": 2}
    t = trace.iteration_seconds
    assert float(ds["iteration_seconds"].sel(rank=1, iteration=3)) == t[1, 2]


def test_to_xarray_of_a_schema1_trace() -> None:
    pytest.importorskip("xarray")
    ds = to_xarray(read_trace(FIXTURE))
    assert ds.attrs["schema_version"] == 1
    assert ds.attrs["path"] == str(FIXTURE)
    assert ds["host"].values.tolist()[:2] == ["host-a", "höst-b"]


def test_without_xarray_to_xarray_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xarray", None)  # import xarray now raises ImportError
    with pytest.raises(EnvironmentProblem, match=r"apt-get install python3-xarray.*pip install"):
        to_xarray(synthetic_trace(2, 3, 1, "cg"))
