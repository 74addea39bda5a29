"""Schema 2: attributes in the groups docs/trace.md documents, dimension scales, host names that
other tools show cleanly; and schema-1 files (flat attributes) still read to the same Trace."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.trace.layout import COORDINATES, DIMENSIONS, HOSTNAME_BYTES
from ksptrace.trace.model import (
    ATTRIBUTE_GROUPS,
    DEFAULT_ATTRIBUTE_GROUP,
    SCHEMA_VERSION,
    Trace,
    attribute_group,
)
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import placeholder_image, write_trace
from tests.conftest import ROOT
from tests.trace.schema1 import FIXTURE, write_schema1

EVERY_GROUP = {name: f"value of {name}" for names in ATTRIBUTE_GROUPS.values() for name in names}
UNLISTED = {"mx": 7, "hom": "A", "seed": 3, "some_new_flag": True}


def full_trace(nprocs: int = 3, k: int = 5, injected: bool = True, waits: bool = True) -> Trace:
    """A trace with an attribute of every kind and group, unlisted ones, injected noise, and
    wait and event times."""
    base = synthetic_trace(nprocs, k, 1, "gmres", seed=4)
    attrs = {**EVERY_GROUP, **UNLISTED, "solve_max": 0.5, "oversubscribed": False,
             "nprocs": nprocs}
    noise = np.full((nprocs, k), 1e-6) if injected else None
    return Trace(base.stamps, base.residual_norms, base.node_ids, base.hostnames,
                 base.solve_seconds, attrs, injected_seconds=noise,
                 wait_seconds=np.full((nprocs, k), 2e-7) if waits else None,
                 mpi_calls=np.full((nprocs, k), 2) if waits else None,
                 event_seconds=np.full((nprocs, k, 3), 1e-7) if waits else None)


def assert_same_trace(a: Trace, b: Trace, ignore: tuple[str, ...] = ("schema_version",)) -> None:
    np.testing.assert_array_equal(a.stamps, b.stamps)
    np.testing.assert_array_equal(a.residual_norms, b.residual_norms)
    np.testing.assert_array_equal(a.node_ids, b.node_ids)
    np.testing.assert_array_equal(a.solve_seconds, b.solve_seconds)
    if a.injected_seconds is None:
        assert b.injected_seconds is None
    else:
        assert b.injected_seconds is not None
        np.testing.assert_array_equal(a.injected_seconds, b.injected_seconds)
    for name in ("wait_seconds", "mpi_calls", "event_seconds"):
        mine, theirs = getattr(a, name), getattr(b, name)
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            np.testing.assert_array_equal(mine, theirs)
    assert a.hostnames == b.hostnames
    strip = lambda attrs: {k: v for k, v in attrs.items() if k not in ignore}  # noqa: E731
    assert strip(a.attrs) == strip(b.attrs)
    assert {k: type(v) for k, v in strip(a.attrs).items()} == {
        k: type(v) for k, v in strip(b.attrs).items()}


def test_attributes_live_in_their_groups(tmp_path: Path) -> None:
    trace = full_trace()
    path = write_trace(trace, tmp_path / "t.h5")
    with h5py.File(path) as f:
        assert dict(f.attrs) == {"schema_version": 2}  # one solve: schema 2 (3 is for several)
        assert SCHEMA_VERSION == 3
        for group, names in ATTRIBUTE_GROUPS.items():
            stored = set(f[group].attrs)
            expected = set(names) | (set(UNLISTED) if group == DEFAULT_ATTRIBUTE_GROUP else set())
            assert stored == expected, group
        assert f["run"].attrs["ksp"] == "value of ksp"
        assert f["layout"].attrs["nprocs"] == 3
        assert f["run"].attrs["some_new_flag"]
        assert f["result"].attrs["solve_max"] == 0.5
    back = read_trace(path)
    assert back.attrs["schema_version"] == 2
    assert_same_trace(trace, back, ignore=("schema_version",))


def test_every_group_exists_even_when_empty(tmp_path: Path) -> None:
    path = write_trace(synthetic_trace(2, 4, 1, "cg"), tmp_path / "t.h5")
    with h5py.File(path) as f:
        for group in ATTRIBUTE_GROUPS:
            assert isinstance(f[group], h5py.Group)
        assert dict(f["contamination"].attrs) == {}
        assert f["provenance"].attrs["generator"] == "ksptrace.trace.synthetic"


def test_unlisted_attributes_go_to_run() -> None:
    assert attribute_group("friction_m") == "run"
    assert attribute_group("foreign_cpu_share") == "contamination"
    assert attribute_group("slurm_job_id") == "provenance"
    names = [n for group in ATTRIBUTE_GROUPS.values() for n in group]
    assert len(names) == len(set(names)), "an attribute is listed in two groups"


def _readme_groups() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "trace.md").read_text()
    table = text[text.index("| where | attributes |"):]
    table = table[: table.index("\n\n")]
    rows: dict[str, set[str]] = {}
    for line in table.splitlines()[2:]:
        where, attrs = line.strip("|").split("|", 1)
        rows[re.findall(r"`([^`]+)`", where)[0]] = set(re.findall(r"`([a-z0-9_]+)`", attrs))
    return rows


def test_readme_lists_what_is_written_where() -> None:
    rows = _readme_groups()
    assert rows.pop("/") == {"schema_version"}
    assert set(rows) == set(ATTRIBUTE_GROUPS)
    for group, names in ATTRIBUTE_GROUPS.items():
        if group == DEFAULT_ATTRIBUTE_GROUP:
            assert set(names) <= rows[group]
            extra = rows[group] - set(names) - {"none"}  # `none`: a value of noise
            assert all(attribute_group(n) == group for n in extra), extra
        else:
            assert rows[group] == set(names), group


def test_datasets_have_dimension_scales(tmp_path: Path) -> None:
    trace = full_trace(nprocs=3, k=5)
    path = write_trace(trace, tmp_path / "t.h5")
    with h5py.File(path) as f:
        np.testing.assert_array_equal(f["rank"][...], [0, 1, 2])
        np.testing.assert_array_equal(f["stamp"][...], np.arange(6))
        np.testing.assert_array_equal(f["iteration"][...], np.arange(1, 6))
        for name in COORDINATES:
            assert h5py.h5ds.is_scale(f[name].id)
        for name, dims in DIMENSIONS.items():
            ds = f[name]
            assert len(ds.dims) == len(dims)
            for axis, dim in enumerate(dims):
                assert ds.dims[axis].label == dim
                (scale,) = ds.dims[axis].values()
                assert scale.name == f"/{dim}"
                assert scale.shape[0] == ds.shape[axis]


def test_host_names_are_utf8_nul_terminated_and_cut_whole(tmp_path: Path) -> None:
    base = synthetic_trace(3, 4, 1, "cg")
    names = ("höst-ä", "é" * 40, "x" * 70)  # 80 and 70 bytes: cut to 64
    trace = Trace(base.stamps, base.residual_norms, base.node_ids, names, base.solve_seconds)
    path = write_trace(trace, tmp_path / "t.h5")
    with h5py.File(path) as f:
        tid = f["hostnames"].id.get_type()
        assert tid.get_strpad() == h5py.h5t.STR_NULLTERM
        assert tid.get_cset() == h5py.h5t.CSET_UTF8
    back = read_trace(path).hostnames
    assert back == ("höst-ä", "é" * 32, "x" * HOSTNAME_BYTES)


def test_h5dump_shows_host_names_without_padding(tmp_path: Path) -> None:
    h5dump = shutil.which("h5dump") or ("/usr/bin/h5dump" if Path("/usr/bin/h5dump").exists()
                                        else None)
    if h5dump is None:
        pytest.skip("h5dump is not installed (Debian: apt-get install hdf5-tools)")
    base = synthetic_trace(2, 4, 1, "cg")
    trace = Trace(base.stamps, base.residual_norms, base.node_ids, ("node-a", "node-b"),
                  base.solve_seconds)
    path = write_trace(trace, tmp_path / "t.h5")
    out = subprocess.run([h5dump, "-d", "/hostnames", str(path)], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert '(0): "node-a", "node-b"' in out, out
    assert "\\000" not in out
    old = subprocess.run([h5dump, "-d", "/hostnames", str(FIXTURE)], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert "\\000" in old  # what schema 1 looked like


def test_the_schema1_fixture_reads_as_before(tmp_path: Path) -> None:
    """The file the old writer made: flat, and read to the Trace its schema-2 copy gives."""
    with h5py.File(FIXTURE) as f:
        assert f.attrs["schema_version"] == 1
        assert "run" not in f
        assert "ksp" in f.attrs
    old = read_trace(FIXTURE)
    assert old.attrs["schema_version"] == 1
    assert old.hostnames == ("host-a", "höst-b", "h" * 64)
    assert old.attrs["ksp"] == "gmres"
    assert old.attrs["oversubscribed"] is True
    assert old.attrs["foreign_cpu_share"] == 0.015
    assert old.attrs["mx"] == 5
    assert old.injected_seconds is not None
    assert old.nprocs == 3
    assert old.iterations == 6
    new = read_trace(write_trace(old, tmp_path / "v2.h5"))
    assert new.attrs["schema_version"] == 2
    assert_same_trace(old, new)
    with h5py.File(tmp_path / "v2.h5") as f:
        assert f["contamination"].attrs["foreign_cpu_share"] == 0.015
        assert f["run"].attrs["mx"] == 5


@pytest.mark.parametrize("injected", [False, True])
def test_schema1_and_schema2_read_to_the_same_trace(tmp_path: Path, injected: bool) -> None:
    trace = full_trace(injected=injected, waits=False)  # schema 1 predates them
    one = read_trace(write_schema1(trace, tmp_path / "v1.h5"))
    two = read_trace(write_trace(trace, tmp_path / "v2.h5"))
    assert (one.attrs["schema_version"], two.attrs["schema_version"]) == (1, 2)
    assert_same_trace(one, two)
    assert_same_trace(trace, one)


def test_schema1_groups_are_not_read_as_attributes(tmp_path: Path) -> None:
    """Only schema 2 reads attribute groups: a group 'run' in a schema-1 file is ignored."""
    path = write_schema1(synthetic_trace(2, 4, 1, "cg"), tmp_path / "v1.h5")
    with h5py.File(path, "a") as f:
        f.create_group("run").attrs["stray"] = 1
    assert "stray" not in read_trace(path).attrs


def test_a_missing_group_is_no_attributes(tmp_path: Path) -> None:
    path = write_trace(full_trace(), tmp_path / "t.h5")
    with h5py.File(path, "a") as f:
        del f["provenance"]
    attrs = read_trace(path).attrs
    assert "start_utc" not in attrs
    assert attrs["ksp"] == "value of ksp"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = write_trace(full_trace(), tmp_path / "t.h5")
    with h5py.File(path, "a") as f:
        f.attrs["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(TraceError, match="newer than this ksptrace reads"):
        read_trace(path)


def test_placeholder_image_is_schema2(tmp_path: Path) -> None:
    """The file rank 0 creates for MPI-IO has the groups and scales before any row is in."""
    path = tmp_path / "p.h5"
    path.write_bytes(placeholder_image(2, 5, {"problem": "laplace1d", "nprocs": 2,
                                              "foreign_cpu_share": None}, injected=True))
    with h5py.File(path) as f:
        assert f.attrs["schema_version"] == 2
        assert f["run"].attrs["problem"] == "laplace1d"
        assert f["layout"].attrs["nprocs"] == 2
        assert "foreign_cpu_share" not in f["contamination"].attrs
        assert f["injected_seconds"].dims[1].label == "iteration"
        np.testing.assert_array_equal(f["iteration"][...], np.arange(1, 5))
        assert f["hostnames"][...].tolist() == [b"", b""]
