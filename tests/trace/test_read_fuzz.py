"""Property-based fuzzing of the trace reader: mutations of a valid trace (random attributes on
the root or in an attribute group, datasets of random dtypes and shapes, groups where datasets
belong and datasets where attribute groups belong, huge declared shapes, odd values) give either
a valid Trace or one TraceError line that names the file, never anything else."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ksptrace.errors import TraceError
from ksptrace.trace.layout import COORDINATES, DATASETS, OPTIONAL_DATASETS
from ksptrace.trace.model import ATTRIBUTE_GROUPS, Trace
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import trace_image

VALID = bytes(trace_image(synthetic_trace(3, 12, 2, "cg", seed=7)))
ATTR_NAMES = ["schema_version", "problem", "n", "ksp", "iterations", "restart", "nprocs", "extra"]
PLACES = ["/", *ATTRIBUTE_GROUPS]
"""Where an attribute edit lands: the root or an attribute group (schema 2)."""
OBJECTS = sorted({**DATASETS, **OPTIONAL_DATASETS, **COORDINATES, **ATTRIBUTE_GROUPS})
"""What a dataset or group edit replaces or deletes."""

DTYPES = st.sampled_from([
    np.dtype(d) for d in ("f8", "f4", "f2", "i8", "i4", "u8", "u1", "?", "c16", "S8", "S1")
] + [np.dtype([("a", "f8"), ("b", "i4")])])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)

scalar_values = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    FLOATS,
    st.booleans(),
    st.complex_numbers(allow_nan=True),
    st.text(max_size=20),
    st.binary(max_size=20).map(np.bytes_),
)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = draw(DTYPES)
    shape = draw(SHAPES)
    if dtype.kind in "fc":
        return draw(hnp.arrays(dtype, shape, elements=st.floats(allow_nan=True, width=16)))
    return draw(hnp.arrays(dtype, shape))


@st.composite
def mutations(draw: st.DrawFn) -> list[tuple[str, str, Any, str]]:
    """A few (kind, name, value, place) edits of the valid trace."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(
            ["attr", "attr-array", "del-attr", "data", "del", "group", "huge", "values"]
        ))
        if kind.endswith("attr") or kind == "attr-array":
            name = draw(st.sampled_from(ATTR_NAMES))
        else:
            name = draw(st.sampled_from(OBJECTS))
        place = draw(st.sampled_from(PLACES))
        if kind == "attr":
            value: Any = draw(scalar_values)
        elif kind == "attr-array" or kind == "data":
            value = draw(arrays())
        elif kind == "huge":
            value = tuple(draw(st.lists(st.integers(1, 2**31), min_size=1, max_size=3)))
        elif kind == "values":
            value = draw(st.one_of(FLOATS, st.integers(-(2**62), 2**62)))
        else:
            value = None
        edits.append((kind, name, value, place))
    return edits


def apply(f: h5py.File, kind: str, name: str, value: Any, place: str) -> None:
    if kind in ("attr", "attr-array", "del-attr"):
        target = f if place == "/" else f.get(place)
        if not isinstance(target, h5py.Group):
            return  # that group was replaced or deleted by an earlier edit
        if kind == "del-attr":
            if name in target.attrs:
                del target.attrs[name]
        else:
            target.attrs[name] = value
    elif kind != "values" and (name in f or name in OPTIONAL_DATASETS):
        if name in f:
            del f[name]
        if kind == "data":
            f.create_dataset(name, data=value)
        elif kind == "group":
            f.create_group(name)
        elif kind == "huge":
            f.create_dataset(name, value, dtype="f8", chunks=tuple(1 for _ in value))
    if kind == "values" and (not isinstance(f.get(name), h5py.Dataset) or f[name].size > 2**20):
        return  # nothing to change, or a huge dataset an earlier edit declared
    if kind == "values":
        ds = f[name]
        data = ds[...]
        flat = data.reshape(-1)
        if flat.size:
            with warnings.catch_warnings():  # out of the dtype's range, or NaN into integers
                warnings.simplefilter("ignore")
                flat[flat.size // 2] = value
        ds[...] = data


def check_outcome(path: Path) -> None:
    """A valid Trace, or a TraceError of one line that starts with the file name."""
    try:
        trace = read_trace(path)
    except TraceError as exc:
        message = str(exc)
    else:
        assert isinstance(trace, Trace)
        assert trace.timing_fault() is None
        event("valid trace")
        return
    event("TraceError")
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message
    assert len(message) < 600


@settings(max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutations())
def test_mutated_traces_give_a_trace_or_one_named_error(
    edits: list[tuple[str, str, Any, str]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.h5"
        path.write_bytes(VALID)
        try:
            with h5py.File(path, "a") as f:
                for kind, name, value, place in edits:
                    apply(f, kind, name, value, place)
        except (TypeError, ValueError, OSError, OverflowError):
            return  # h5py cannot store this mutation; nothing to read
        event("read")
        check_outcome(path)


@settings(max_examples=60, deadline=None, database=None)
@given(st.binary(min_size=0, max_size=4096), st.integers(0, len(VALID)))
def test_damaged_bytes_give_a_trace_or_one_named_error(junk: bytes, at: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged.h5"
        path.write_bytes(VALID[:at] + junk + VALID[at + len(junk):])
        check_outcome(path)


def test_the_unmutated_image_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    path.write_bytes(VALID)
    assert read_trace(path).nprocs == 3
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "absent.h5")
