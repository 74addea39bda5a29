"""Crafted bad traces: each is refused with a TraceError naming the file and the reason, and
``ksptrace analyze`` and ``ksptrace segment`` skip it (one named line) and analyse the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.errors import TraceError
from ksptrace.trace.layout import HOSTNAME_BYTES
from ksptrace.trace.model import attribute_group
from ksptrace.trace.read import iter_traces, read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.trace.schema1 import write_schema1

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--candidates", "norm", "--fit-size", "200", "--mc-runs", "2", "--no-figures"]

Craft = Callable[[h5py.File], None]


def _attr(name: str, value: object, where: str | None = None) -> Craft:
    """Set attribute ``name`` where the file keeps it: ``schema_version`` on the root, any other
    in its group (schema 2) or on the root of a schema-1 file; or in the group ``where``."""

    def craft(f: h5py.File) -> None:
        if where is None:
            flat = name == "schema_version" or f.attrs["schema_version"] == 1
            target = f if flat else f[attribute_group(name)]
        else:
            target = f if where == "/" else f[where]
        target.attrs[name] = value

    return craft


def _replace(name: str, make: Callable[[h5py.File, tuple[int, ...]], object]) -> Craft:
    def craft(f: h5py.File) -> None:
        shape = f[name].shape
        del f[name]
        make(f, shape)

    return craft


def _stamps(values: Callable[[np.ndarray], np.ndarray]) -> Craft:
    def craft(f: h5py.File) -> None:
        stamps = values(f["stamps"][...])
        f["stamps"][...] = stamps
        f["iteration_seconds"][...] = np.diff(stamps, axis=1)

    return craft


def _invalid_utf8_vlen(f: h5py.File) -> None:
    """A variable-length UTF-8 string attribute whose bytes are not UTF-8 (low-level write)."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(h5py.h5t.VARIABLE)
    tid.set_cset(h5py.h5t.CSET_UTF8)
    aid = h5py.h5a.create(f["run"].id, b"problem_note", tid, h5py.h5s.create(h5py.h5s.SCALAR))
    aid.write(np.array(b"caf\xe9", dtype=h5py.string_dtype("utf-8")))


def _invalid_utf8_hostnames(f: h5py.File) -> None:
    """Host names of the schema-2 type (NUL-terminated UTF-8) whose bytes are not UTF-8."""
    tid = f["hostnames"].id.get_type()
    raw = np.array([b"h\xff"] * f["hostnames"].shape[0], dtype=f"S{HOSTNAME_BYTES + 1}")
    f["hostnames"].id.write(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=tid)


def _group_as_dataset(f: h5py.File) -> None:
    del f["run"]
    f.create_dataset("run", data=np.arange(3))


CRAFTS: dict[str, tuple[Craft, str]] = {
    "schema-inf": (_attr("schema_version", np.inf), "schema_version"),
    "schema-array": (_attr("schema_version", np.array([1, 1])), "schema_version"),
    "schema-minus-one": (_attr("schema_version", -1), "schema_version"),
    "schema-zero": (_attr("schema_version", 0), "schema_version"),
    "schema-true": (_attr("schema_version", True), "schema_version"),
    "schema-complex": (_attr("schema_version", 1 + 0j), "schema_version"),
    "schema-bytes": (_attr("schema_version", np.bytes_(b"1")), "schema_version"),
    "schema-float": (_attr("schema_version", 1.0), "schema_version"),
    "stamps-compound": (
        _replace("stamps", lambda f, s: f.create_dataset(
            "stamps", s, dtype=[("t", "f8"), ("u", "f8")])),
        "stamps.*dtype",
    ),
    "stamps-group": (_replace("stamps", lambda f, s: f.create_group("stamps")), "stamps.*group"),
    "hostnames-int": (
        _replace("hostnames", lambda f, s: f.create_dataset("hostnames", data=np.arange(s[0]))),
        "hostnames.*dtype",
    ),
    "hostnames-float": (
        _replace("hostnames", lambda f, s: f.create_dataset("hostnames", data=np.ones(s[0]))),
        "hostnames.*dtype",
    ),
    "hostnames-invalid-utf8": (
        _replace("hostnames", lambda f, s: f.create_dataset(
            "hostnames", data=np.array([b"h\xff"] * s[0], dtype="S64"))),
        "hostnames.*UTF-8",
    ),
    "node-ids-negative": (
        _replace("node_ids", lambda f, s: f.create_dataset(
            "node_ids", data=-np.arange(1, s[0] + 1))),
        "node_ids",
    ),
    "node-ids-huge": (
        _replace("node_ids", lambda f, s: f.create_dataset(
            "node_ids", data=np.full(s[0], 2**62, dtype=np.int64))),
        "node_ids",
    ),
    "residuals-terabytes": (
        _replace("residual_norms", lambda f, s: f.create_dataset(
            "residual_norms", (2**40,), dtype="f8", chunks=(4096,))),
        "residual_norms.*(TiB|GiB|larger)",
    ),
    "stamps-terabytes": (
        _replace("stamps", lambda f, s: f.create_dataset(
            "stamps", (2**20, 2**20), dtype="f8", chunks=(1, 4096))),
        "stamps.*(TiB|GiB|larger)",
    ),
    "stamps-1d": (
        _replace("stamps", lambda f, s: f.create_dataset("stamps", data=np.arange(5.0))),
        "stamps.*shape",
    ),
    "tiny-durations": (
        _stamps(lambda s: np.cumsum(np.full(s.shape, 1e-300), axis=1)),
        "below 1 ns",
    ),
    "zero-durations": (_stamps(lambda s: np.zeros_like(s)), "not increasing"),
    "backwards": (_stamps(lambda s: s[:, ::-1].copy()), "not increasing"),
    "nan": (_stamps(lambda s: np.where(s > s[0, 2], np.nan, s)), "NaN or inf"),
    "attr-invalid-utf8": (_attr("problem", np.bytes_(b"lap\xfflace")), "problem.*UTF-8"),
    "attr-invalid-utf8-vlen": (_invalid_utf8_vlen, "problem_note.*UTF-8"),
    "hostnames-nullterm-invalid-utf8": (_invalid_utf8_hostnames, "hostnames.*UTF-8"),
    "group-is-dataset": (_group_as_dataset, "run is a dataset"),
    "attr-on-root-and-in-group": (_attr("ksp", "gmres", where="/"), "'ksp' is stored twice"),
    "attr-in-two-groups": (_attr("nprocs", 4, where="result"), "'nprocs' is stored twice"),
    "schema1-attr-invalid-utf8": (_attr("problem", np.bytes_(b"lap\xfflace")), "problem.*UTF-8"),
    "schema1-schema-zero": (_attr("schema_version", 0), "schema_version"),
    "schema1-stamps-1d": (
        _replace("stamps", lambda f, s: f.create_dataset("stamps", data=np.arange(5.0))),
        "stamps.*shape",
    ),
}
"""Each bad trace: how to craft it from a good one, and what the error must say. Names that
start with 'schema1-' start from a schema-1 file (flat attributes), the others from schema 2."""


def crafted(folder: Path, name: str, seed: int = 1) -> Path:
    path = folder / f"{name}.h5"
    good = synthetic_trace(4, 24, 2, "cg", seed=seed)
    if name.startswith("schema1-"):
        write_schema1(good, path)
    else:
        write_trace(good, path)
    with h5py.File(path, "a") as f:
        CRAFTS[name][0](f)
    return path


@pytest.mark.parametrize("name", sorted(CRAFTS))
def test_crafted_trace_is_named_and_skipped(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = crafted(tmp_path, name)
    with pytest.raises(TraceError, match=CRAFTS[name][1]) as info:
        read_trace(bad)
    message = str(info.value)
    assert message.startswith(f"{bad}: ")
    assert "\n" not in message
    (item,) = iter_traces([bad])
    assert isinstance(item, TraceError)

    good = tmp_path / "good.h5"
    write_trace(synthetic_trace(4, 40, 2, "cg", seed=2), good)
    out = tmp_path / "d"
    capsys.readouterr()
    assert main(["analyze", str(good), str(bad), "--out", str(out), *FAST]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    named = [line for line in err.splitlines() if bad.name in line]
    assert len(named) == 1, err
    assert message.removeprefix(f"{bad}: ") in named[0]
    summary = json.loads((out / "summary.json").read_text())
    assert [s["path"] for s in summary["skipped"]] == [str(bad)]
    assert "good.h5" in (out / "report.html").read_text()


def test_unreadable_file_says_permission_denied(tmp_path: Path) -> None:
    path = write_trace(synthetic_trace(2, 10, 1, "cg"), tmp_path / "private.h5")
    path.chmod(0)
    if os.geteuid() != 0:
        with pytest.raises(TraceError, match="permission denied") as info:
            read_trace(path)
        assert str(path) in str(info.value)
        return
    # root reads anything: read as the unprivileged user 'nobody' instead
    os.chmod(tmp_path, 0o755)
    for parent in tmp_path.parents:
        if parent == Path("/tmp") or parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o005)
    code = (
        "import os, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "from ksptrace.trace.io import read_trace\n"
        "from ksptrace.errors import TraceError\n"
        "try:\n    read_trace(sys.argv[1])\n"
        "except TraceError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, check=False)
    if "Error" in done.stderr and "read_trace(" not in done.stderr:
        pytest.skip(f"the user nobody cannot import ksptrace here: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{path}: permission denied"), done.stdout


DATA = ROOT / "tests" / "data" / "trace"


def test_a_file_that_hangs_hdf5_is_refused_in_bounded_time(tmp_path: Path) -> None:
    """``hdf5_hang.h5``: a valid trace with 2 bytes damaged (found by the fuzzer) on which
    libhdf5 loops forever while reading an attribute."""
    hang = tmp_path / "hang.h5"
    hang.write_bytes((DATA / "hdf5_hang.h5").read_bytes())
    code = (
        "import sys\n"
        "import ksptrace.trace.io as io\n"
        "import ksptrace.trace.probe as probe\n"
        "probe.PROBE_SECONDS = 1.0\n"
        "from ksptrace.errors import TraceError\n"
        "try:\n    io.read_trace(sys.argv[1])\n"
        "except TraceError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(hang)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{hang}: reading it did not finish within 1 s"), done.stdout
    assert done.stderr == ""


def test_a_file_that_crashes_hdf5_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segmentation fault in libhdf5 (the fuzzer found some, though not reproducibly from a
    fresh process) kills only the forked reader; the caller gets a TraceError."""
    import signal

    import ksptrace.trace.io as io
    from ksptrace.trace import shared_read

    path = write_trace(synthetic_trace(2, 10, 1, "cg"), tmp_path / "t.h5")

    def segfault(p: Path, file_bytes: int, alloc: object = None) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(shared_read, "read_fields", segfault)
    with pytest.raises(TraceError, match=r"HDF5 library crashed reading it \(signal 11\)") as info:
        io.read_trace(path)
    assert str(info.value).startswith(f"{path}: ")
