"""Both parallel write paths (MPI-IO and gather) produce complete schema-2 traces: attribute
groups, dimension scales and NUL-terminated UTF-8 host names, written by ``mpiexec -n 2``."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest

from ksptrace.trace.layout import DIMENSIONS
from ksptrace.trace.model import ATTRIBUTE_GROUPS, attribute_group
from ksptrace.trace.read import read_trace

pytestmark = pytest.mark.mpi

K = 12


@pytest.fixture(scope="module")
def written(ksptrace_cli, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("writer")
    paths = {}
    for mode in ("mpio", "gather"):
        path = out / f"{mode}.h5"
        proc = ksptrace_cli("run", "--n", "1000", "--iterations", str(K), "--np", "2",
                            "--hdf5-path", mode, "--noise", "fixed:value=1us,p=0.5", "--events",
                            "--out", str(path))
        assert proc.returncode == 0, proc.stderr
        paths[mode] = path
    return paths


@pytest.mark.parametrize("mode", ["mpio", "gather"])
def test_attributes_are_grouped(written: dict[str, Path], mode: str) -> None:
    with h5py.File(written[mode]) as f:
        assert dict(f.attrs) == {"schema_version": 2}
        for group in ATTRIBUTE_GROUPS:
            for name in f[group].attrs:
                assert attribute_group(name) == group, (group, name)
        assert f["run"].attrs["ksp"] == "gmres"
        assert f["run"].attrs["noise"] != "none"
        assert f["result"].attrs["iterations_done"] == K
        assert f["layout"].attrs["hdf5_path"] == mode
        assert f["layout"].attrs["nprocs"] == 2
        assert "loadavg_before" in f["contamination"].attrs
        assert "petsc_version" in f["provenance"].attrs


@pytest.mark.parametrize("mode", ["mpio", "gather"])
def test_datasets_have_scales_and_clean_host_names(written: dict[str, Path], mode: str) -> None:
    with h5py.File(written[mode]) as f:
        assert f["rank"][...].tolist() == [0, 1]
        assert f["iteration"][...].tolist() == list(range(1, K + 1))
        for name, dims in DIMENSIONS.items():
            assert [d.label for d in f[name].dims] == list(dims), name
        tid = f["hostnames"].id.get_type()
        assert tid.get_strpad() == h5py.h5t.STR_NULLTERM
        assert tid.get_cset() == h5py.h5t.CSET_UTF8
    trace = read_trace(written[mode])
    assert trace.attrs["hdf5_path"] == mode
    assert all(trace.hostnames)
    assert len(set(trace.stamps[:, 0])) == 2  # each rank wrote its own row
    assert trace.injected_seconds is not None


def test_xarray_opens_the_mpio_trace(written: dict[str, Path]) -> None:
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    with xr.open_dataset(written["mpio"], engine="h5netcdf") as ds:
        assert ds["iteration_seconds"].dims == ("rank", "iteration")
        # --events: the event axis, named by the scale's attribute, opens as netCDF too
        assert dict(ds.sizes) == {"rank": 2, "iteration": K, "stamp": K + 1, "event": 3}
        assert ds["event_seconds"].dims == ("rank", "iteration", "event")
        assert all(isinstance(h, str) and h for h in ds["hostnames"].values)
