"""Trace files: the HDF5 layout, an atomic serial writer and a validating reader.

Schema 2 keeps ``schema_version`` on the file's root, every other attribute in a group named
as in :data:`ksptrace.trace.model.ATTRIBUTE_GROUPS`, and gives each dataset's axes dimension
scales (``rank``, ``stamp``, ``iteration``). Schema 3, written only for a trace of several
solves, adds the group ``solves`` (:data:`SOLVE_DATASETS`); a trace of one solve is still
written as schema 2. Schema-1 files, with all attributes on the root and no scales, are read
too.

The parallel (MPI-IO) writer lives in ``ksptrace.harness.writer``; it shares the layout and the
atomic-publish step defined here. This module imports h5py but neither mpi4py nor petsc4py.
"""

from __future__ import annotations

import contextlib
import errno
import faulthandler
import math
import mmap
import os
import pickle
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from io import BytesIO
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ksptrace.errors import OutputError, TraceError, UsageError
from ksptrace.trace import probe
from ksptrace.trace.model import (
    ATTRIBUTE_GROUPS,
    ONE_SOLVE_SCHEMA,
    SCHEMA_VERSION,
    AttrValue,
    Solves,
    Trace,
    attribute_group,
)
from ksptrace.trace.temporaries import temp_path_for

HOSTNAME_BYTES = 64
"""The longest host name kept, in UTF-8 bytes (Linux's HOST_NAME_MAX).

Host names are stored fixed-length, because ranks write their own row in parallel and HDF5
cannot write variable-length strings through MPI-IO. The file type is UTF-8 with a terminating
NUL (``H5T_STR_NULLTERM``, one byte more than this), so that h5dump and netCDF readers show the
names without padding; schema-1 files padded them with NULs (``S64``), which reads the same."""
HOSTNAME_DTYPE = h5py.string_dtype("utf-8", HOSTNAME_BYTES)
"""The in-memory type of host names on their way into a file (h5py converts the padding)."""

DATASETS: dict[str, str] = {
    "stamps": "float64 [P, K+1]: MPI.Wtime() at each KSP monitor call, per rank (seconds)",
    "iteration_seconds": "float64 [P, K]: T_p^k = stamps[:, 1:] - stamps[:, :-1]",
    "residual_norms": "float64 [K+1]: residual norm passed to the KSP monitor",
    "node_ids": "int64 [P]: node (shared-memory domain) of each rank, 0-based",
    "hostnames": f"UTF-8 string of up to {HOSTNAME_BYTES} bytes [P]: host name of each rank",
    "solve_seconds": "float64 [P]: KSPSolve time of each rank (how: attribute solve_time_source)",
}
OPTIONAL_DATASETS: dict[str, str] = {
    "injected_seconds": "float64 [P, K]: detours injected into each iteration (runs with noise)",
}
COORDINATES: dict[str, str] = {
    "rank": "int64 [P]: 0..P-1, the rank of each row",
    "stamp": "int64 [K+1]: 0..K, the monitor call of each column of stamps and residual_norms",
    "iteration": "int64 [K]: 1..K, the iteration k of each column of iteration_seconds",
}
"""Dimension scales (schema 2 on): they name the axes of the datasets for netCDF tools such as
xarray. Readers of ksptrace need none of them."""
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "stamps": ("rank", "stamp"),
    "iteration_seconds": ("rank", "iteration"),
    "residual_norms": ("stamp",),
    "node_ids": ("rank",),
    "hostnames": ("rank",),
    "solve_seconds": ("rank",),
    "injected_seconds": ("rank", "iteration"),
}
"""The coordinate of each axis of each dataset."""
_DTYPES: dict[str, str] = {"node_ids": "i8"}
SOLVES_GROUP = "solves"
SOLVE_DATASETS: dict[str, str] = {
    "offsets": "int64 [S+1]: solve s holds columns offsets[s]:offsets[s+1] of stamps",
    "seconds": "float64 [P, S]: each solve's KSPSolve time on each rank (PETSc's event log)",
    "reasons": "UTF-8 strings [S]: each solve's KSPConvergedReason",
    "petsc_iterations": "int64 [S]: the iteration count PETSc reported after each solve",
}
"""The group of a trace of several solves (schema 3). ``stamps`` and ``residual_norms`` then
hold the solves one after the other, ``iteration_seconds`` every solve's iterations (never the
gap between two solves) and ``solve_seconds`` each rank's total."""
"""Dataset types other than float64 (host names have their own, see :func:`_create_hostnames`)."""


def check_destination(path: Path, overwrite: bool) -> None:
    """Fail early, before any work, if ``path`` cannot be written."""
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"output folder {parent} does not exist; create it or pick another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"output folder {parent} is not writable; pick another --out")
    if path.exists() and not overwrite:
        raise UsageError(f"{path} already exists; pass --overwrite to replace it")


def publish(tmp: Path, final: Path, overwrite: bool) -> None:
    """Move a complete temporary file to its final name in one atomic step.

    Without ``overwrite`` a hard link is used, which fails instead of clobbering a file that
    appeared meanwhile. Any other failure is one OutputError; the temporary file never stays.
    """
    try:
        _move(tmp, final, overwrite)
    except OSError as exc:
        raise OutputError(describe_write_error(exc, final, 0)) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _move(tmp: Path, final: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(tmp, final)
        return
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise UsageError(f"{final} already exists; pass --overwrite to replace it") from None
    except OSError:
        # File systems without hard links: fall back to a checked rename.
        if final.exists():
            raise UsageError(f"{final} already exists; pass --overwrite to replace it") from None
        os.replace(tmp, final)


def encode_hostnames(names: list[str] | tuple[str, ...]) -> np.ndarray:
    """Host names as UTF-8 bytes ready for the ``hostnames`` dataset: NULs dropped, each cut to
    :data:`HOSTNAME_BYTES` bytes without splitting a character."""
    cut = [
        n.replace("\x00", "").encode("utf-8")[:HOSTNAME_BYTES].decode("utf-8", "ignore")
        for n in names
    ]
    return np.array([c.encode("utf-8") for c in cut], dtype=HOSTNAME_DTYPE)


def write_attrs(
    f: h5py.File, attrs: Mapping[str, AttrValue | None], version: int = ONE_SOLVE_SCHEMA
) -> None:
    """Write ``schema_version`` on the root and every other attribute into its group.

    All groups of :data:`ATTRIBUTE_GROUPS` are created, empty ones too, so that a reader can
    open any of them. Attributes whose value is None are left out.
    """
    f.attrs["schema_version"] = version
    groups = {name: f.create_group(name) for name in ATTRIBUTE_GROUPS}
    for key, value in attrs.items():
        if value is None or key == "schema_version":
            continue
        stored = value.replace("\x00", "") if isinstance(value, str) else value
        groups[attribute_group(key)].attrs[key] = stored


def _create_hostnames(f: h5py.File, nprocs: int) -> h5py.Dataset:
    """The ``hostnames`` dataset: fixed-length, NUL-terminated UTF-8 (see HOSTNAME_BYTES)."""
    tid = h5py.h5t.C_S1.copy()
    tid.set_size(HOSTNAME_BYTES + 1)
    tid.set_strpad(h5py.h5t.STR_NULLTERM)
    tid.set_cset(h5py.h5t.CSET_UTF8)
    h5py.h5d.create(f.id, b"hostnames", tid, h5py.h5s.create_simple((nprocs,)))
    ds = f["hostnames"]
    ds.attrs["_Encoding"] = "utf-8"  # netCDF's convention: xarray then shows text, not bytes
    return ds


def create_layout(
    f: h5py.File, nprocs: int, nstamps: int, injected: bool = False, solves: int = 1
) -> dict[str, h5py.Dataset]:
    """Create every dataset (``injected_seconds`` only for a run with injected noise), and the
    coordinates of :data:`COORDINATES`, filled, as the dimension scales of their axes.

    Returns the datasets still to be filled, by name (not the coordinates).
    """
    sizes = {"rank": nprocs, "stamp": nstamps, "iteration": nstamps - solves}
    scales: dict[str, h5py.Dataset] = {}
    for name, first in (("rank", 0), ("stamp", 0), ("iteration", 1)):
        scale = f.create_dataset(name, data=np.arange(first, first + sizes[name], dtype="i8"))
        scale.make_scale(name)
        scales[name] = scale
    names = [*DATASETS, *(OPTIONAL_DATASETS if injected else ())]
    made: dict[str, h5py.Dataset] = {}
    for name in names:
        dims = DIMENSIONS[name]
        if name == "hostnames":
            ds = _create_hostnames(f, nprocs)
        else:
            shape = tuple(sizes[d] for d in dims)
            ds = f.create_dataset(name, shape, dtype=_DTYPES.get(name, "f8"))
        for axis, dim in enumerate(dims):
            ds.dims[axis].attach_scale(scales[dim])
            ds.dims[axis].label = dim
        made[name] = ds
    return made


def fill_file(f: h5py.File, trace: Trace, after_stamps: Callable[[], None] | None = None) -> None:
    """Write every dataset and attribute of ``trace`` into the open file ``f``."""
    count = 1 if trace.solves is None else trace.solves.count
    ds = create_layout(f, trace.nprocs, trace.stamps.shape[1],
                       injected=trace.injected_seconds is not None, solves=count)
    write_attrs(f, trace.attrs, ONE_SOLVE_SCHEMA if trace.solves is None else SCHEMA_VERSION)
    if trace.solves is not None:
        _write_solves(f, trace.solves)
    if trace.injected_seconds is not None:
        ds["injected_seconds"][...] = trace.injected_seconds
    ds["stamps"][...] = trace.stamps
    if after_stamps is not None:
        after_stamps()
    ds["iteration_seconds"][...] = trace.iteration_seconds
    ds["residual_norms"][...] = trace.residual_norms
    ds["node_ids"][...] = trace.node_ids
    ds["hostnames"][...] = encode_hostnames(trace.hostnames)
    ds["solve_seconds"][...] = trace.solve_seconds


def _write_solves(f: h5py.File, solves: Solves) -> None:
    g = f.create_group(SOLVES_GROUP)
    g.create_dataset("offsets", data=solves.offsets, dtype="i8")
    g.create_dataset("seconds", data=solves.seconds, dtype="f8")
    g.create_dataset("reasons", data=list(solves.reasons), dtype=h5py.string_dtype("utf-8"))
    g.create_dataset("petsc_iterations", data=solves.petsc_iterations, dtype="i8")
    for name, text in SOLVE_DATASETS.items():
        g[name].attrs["description"] = text


def _read_solves(f: h5py.File, nprocs: int, nstamps: int, limit: int) -> Solves:
    """The solves group of a schema-3 trace, checked before it is read."""
    g = f[SOLVES_GROUP]
    if not isinstance(g, h5py.Group):
        raise TraceError(f"{SOLVES_GROUP} is not a group; a schema-3 trace keeps its solves "
                         "in a group of that name")
    missing = [name for name in SOLVE_DATASETS if name not in g]
    if missing:
        raise TraceError(f"incomplete solves group, missing {', '.join(missing)}")
    kinds = {"offsets": "iu", "seconds": "f", "reasons": "SO", "petsc_iterations": "iu"}
    for name, allowed in kinds.items():
        ds = g[name]
        if not isinstance(ds, h5py.Dataset) or ds.dtype.kind not in allowed:
            raise TraceError(f"solves/{name} is not {SOLVE_DATASETS[name].split(':')[0]}")
        if math.prod(ds.shape or ()) * max(ds.dtype.itemsize, 1) > limit:
            raise TraceError(f"solves/{name} declares shape {ds.shape}, more than the file holds")
    count = int((g["offsets"].shape or (0,))[0]) - 1
    shapes = {"offsets": (count + 1,), "seconds": (nprocs, count), "reasons": (count,),
              "petsc_iterations": (count,)}
    for name, shape in shapes.items():
        if count < 1 or tuple(g[name].shape or ()) != shape:
            raise TraceError(f"solves/{name} has shape {g[name].shape}, expected {shape}")
    reasons = tuple(r.decode("utf-8") if isinstance(r, bytes) else str(r)
                    for r in g["reasons"][...])
    solves = Solves(np.asarray(g["offsets"][...]), np.asarray(g["seconds"][...]), reasons,
                    np.asarray(g["petsc_iterations"][...]))
    if solves.offsets[-1] != nstamps:
        raise TraceError(f"the solves end at stamp {solves.offsets[-1]}, the stamps at {nstamps}")
    return solves


def _kib(nbytes: int) -> int:
    return -(-nbytes // 1024)


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding ``folder``."""
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def check_space(folder: Path, needed: int) -> None:
    """Raise OutputError, before anything is written, when ``folder`` lacks ``needed`` bytes.

    The need is rounded up to whole blocks, as the file system allocates them.
    """
    st = os.statvfs(folder)
    block = st.f_frsize or 4096
    free = st.f_bavail * block
    if -(-needed // block) * block > free:
        raise OutputError(_no_space(folder, needed, free))


def _no_space(folder: Path, needed: int, free: int) -> str:
    room = f"needs {_kib(needed)} KiB, " if needed > free else ""
    return (
        f"no space left on {folder} for the trace ({room}{_kib(free)} KiB free); "
        "free some space or pick another --out"
    )


def describe_write_error(exc: BaseException, tmp: Path, needed: int) -> str:
    """One line for a failed write of the ``needed`` bytes of ``tmp``, saying what to do."""
    folder = tmp.parent
    text = str(exc)
    code = getattr(exc, "errno", None)
    if code == errno.EDQUOT or "quota exceeded" in text:
        return (
            f"disk quota exceeded in {folder} for the trace (needs {_kib(needed)} KiB); "
            "free some space or pick another --out"
        )
    if code == errno.ENOSPC or "No space left" in text:
        try:
            free = free_bytes(folder)
        except OSError:
            free = 0
        return _no_space(folder, needed, free)
    if code in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return f"permission denied writing the trace in {folder}; pick a writable --out"
    if code == errno.EROFS or "Read-only file system" in text:
        return f"{folder} is on a read-only file system; pick another --out"
    reason = text.splitlines()[0] if text else type(exc).__name__
    return f"cannot write the trace in {folder}: {reason}; pick another --out"


def trace_image(trace: Trace, after_stamps: Callable[[], None] | None = None) -> memoryview:
    """The bytes of the HDF5 file of ``trace``, built in memory (as much memory as the file)."""
    buf = BytesIO()
    with h5py.File(buf, "w") as f:
        fill_file(f, trace, after_stamps)
    return buf.getbuffer()


PLACEHOLDERS: dict[str, Any] = {"f": np.nan, "i": 0, "S": b""}
"""What a dataset holds, by dtype kind, until the ranks fill in their rows."""


def placeholder_image(
    nprocs: int, nstamps: int, attrs: Mapping[str, AttrValue | None], injected: bool = False
) -> memoryview:
    """The bytes of a trace file with every attribute written (in its group), the coordinates
    filled and attached as dimension scales, and every dataset allocated and filled with
    placeholders (NaN, 0, empty names), built in memory.

    Ranks can then fill in their rows through MPI-IO without allocating space or changing any
    metadata (``tests/harness/test_diskfull.py`` checks both); this is why host names are
    fixed-length strings (:data:`HOSTNAME_BYTES`). Rank 0 holds this image, the
    size of the trace (16 bytes per rank and monitor call), while it writes it.
    """
    buf = BytesIO()
    with h5py.File(buf, "w") as f:
        write_attrs(f, attrs)
        for ds in create_layout(f, nprocs, nstamps, injected).values():
            ds[...] = np.full(ds.shape, PLACEHOLDERS[ds.dtype.kind], dtype=ds.dtype)
    return buf.getbuffer()


def write_image(
    tmp: Path, image: bytes | memoryview, midway: Callable[[], None] | None = None
) -> None:
    """Write ``image`` to the new file ``tmp`` once its size is known to fit.

    Only plain OS calls touch the disk: HDF5 copes badly with a failed write (errors lost in
    destructors, a crash at exit, and with MPI-IO ranks that deadlock in the close). Any failure
    raises one OutputError and leaves no file. ``midway`` runs after half the bytes (tests).
    """
    created = False
    try:
        view = memoryview(image).cast("B")
        check_space(tmp.parent, len(view))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        created = True
        try:
            _write_all(fd, view[: len(view) // 2])
            if midway is not None:
                midway()
            _write_all(fd, view[len(view) // 2 :])
        finally:
            os.close(fd)
    except OSError as exc:
        if created:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise OutputError(describe_write_error(exc, tmp, memoryview(image).nbytes)) from None
    except BaseException:
        if created:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        raise


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


def write_file(tmp: Path, trace: Trace, midway: Callable[[], None] | None = None) -> None:
    """Write ``trace`` to the new file ``tmp``: OutputError, and no file, when it cannot be."""
    write_image(tmp, trace_image(trace), midway)


def write_trace(trace: Trace, path: str | os.PathLike[str], overwrite: bool = False) -> Path:
    """Write ``trace`` to ``path`` atomically (temporary file, then rename)."""
    final = Path(path)
    check_destination(final, overwrite)
    tmp = temp_path_for(final)
    try:
        write_file(tmp, trace)
        publish(tmp, final, overwrite)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return final


def _py(value: Any) -> AttrValue | None:
    """An attribute as a Python scalar; None for arrays and types a trace never stores.

    Raises ValueError when text is not valid UTF-8.
    """
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        value.encode("utf-8")  # h5py hands invalid UTF-8 over as lone surrogates
        return value
    if isinstance(value, np.generic):
        value = value.item()
        if isinstance(value, bytes):
            return value.decode("utf-8")
    if isinstance(value, bool | int | float | str):
        return value
    return None


MAX_SIZE_RATIO = 16
"""A dataset may declare at most this many times the file's size (plus 1 MiB) of data.

Real traces store every value (contiguous, uncompressed; a repacked file compresses timings
less than 2:1), so a larger declared shape is a crafted or corrupt file, refused before any data
are read (chunked datasets with no data written cost nothing to create)."""

_KINDS: dict[str, tuple[str, str]] = {
    "stamps": ("f", "a float array"),
    "iteration_seconds": ("f", "a float array"),
    "residual_norms": ("f", "a float array"),
    "solve_seconds": ("f", "a float array"),
    "node_ids": ("iu", "an integer array"),
    "hostnames": ("S", "an array of strings"),
}
_OPTIONAL_KINDS: dict[str, tuple[str, str]] = {"injected_seconds": ("f", "a float array")}


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} PiB"


def schema_version_of(raw: Any) -> int:
    """The schema version an attribute value states; TraceError (without the file) if none.

    Only a positive integer scalar is a version: not a bool, float, complex, text or array.
    """
    if isinstance(raw, np.ndarray) and raw.shape == ():
        raw = raw[()]
    if isinstance(raw, bool | np.bool_) or not isinstance(raw, int | np.integer):
        shown = f"an array of shape {raw.shape}" if isinstance(raw, np.ndarray) else repr(raw)
        raise TraceError(
            f"schema_version {shown[:60]} is not a positive integer; not a ksptrace trace"
        )
    version = int(raw)
    if version < 1:
        raise TraceError(
            f"schema_version {version} is not a positive integer; not a ksptrace trace"
        )
    if version > SCHEMA_VERSION:
        raise TraceError(
            f"written with trace schema {version}, newer than this ksptrace reads "
            f"({SCHEMA_VERSION}); upgrade ksptrace"
        )
    return version


def check_layout(f: h5py.File, file_bytes: int) -> None:
    """Check every dataset's kind, dtype and shape, and its declared size against the file's,
    before reading any data. Raises TraceError (without the file name)."""
    missing = [name for name in DATASETS if name not in f]
    if missing:
        raise TraceError(f"incomplete trace, missing datasets {', '.join(missing)}")
    limit = MAX_SIZE_RATIO * file_bytes + 2**20
    shapes: dict[str, tuple[int, ...]] = {}
    present = {k: v for k, v in _OPTIONAL_KINDS.items() if k in f}
    for name, (kinds, what) in {**_KINDS, **present}.items():
        obj = f.get(name, getclass=True)
        if obj is not h5py.Dataset:
            kind = "a group" if obj is h5py.Group else "not a dataset"
            raise TraceError(f"{name} is {kind}; a trace stores it as {what}")
        ds = f[name]
        dtype = ds.dtype
        if dtype.kind not in kinds and not (
            kinds == "S" and h5py.check_string_dtype(dtype) is not None
        ):
            raise TraceError(f"{name} has dtype {dtype}; a trace stores it as {what}")
        shape = tuple(int(n) for n in ds.shape or ())
        declared = math.prod(shape) * max(dtype.itemsize, 1)
        if declared > limit:
            raise TraceError(
                f"{name} declares shape {shape}, {_human(declared)} of data, larger than a "
                f"{_human(file_bytes)} file can hold; the file is corrupt or was not written by "
                "ksptrace"
            )
        shapes[name] = shape
    stamps = shapes["stamps"]
    if len(stamps) != 2 or stamps[0] < 1 or stamps[1] < 1 or (
            stamps[1] < 2 and SOLVES_GROUP not in f):
        raise TraceError(
            f"stamps has shape {stamps}, expected [P >= 1, K+1 >= 2]; the run recorded no iteration"
        )
    nprocs, nstamps = stamps
    count = 1
    if SOLVES_GROUP in f and "offsets" in f[SOLVES_GROUP]:
        count = max(int((f[SOLVES_GROUP]["offsets"].shape or (2,))[0]) - 1, 1)
    expected = {
        "iteration_seconds": (nprocs, nstamps - count),
        "residual_norms": (nstamps,),
        "solve_seconds": (nprocs,),
        "node_ids": (nprocs,),
        "hostnames": (nprocs,),
    }
    if "injected_seconds" in present:
        expected["injected_seconds"] = (nprocs, nstamps - 1)
    for name, shape in expected.items():
        if shapes[name] != shape:
            raise TraceError(
                f"{name} has shape {shapes[name]}, expected {shape} for stamps of shape {stamps}"
            )


def _attribute_places(f: h5py.File, version: int) -> Iterator[tuple[str, Any]]:
    """Where a trace of schema ``version`` keeps attributes: (name, attribute manager) of the
    root and, from schema 2 on, of each attribute group the file has."""
    yield "the root", f.attrs
    if version < 2:
        return
    for name in ATTRIBUTE_GROUPS:
        kind = f.get(name, getclass=True)
        if kind is None:
            continue  # every attribute is optional, and so is a group without any
        if kind is not h5py.Group:
            what = "a dataset" if kind is h5py.Dataset else "not a group"
            raise TraceError(
                f"{name} is {what}; a schema-{version} trace keeps its {name} attributes in a "
                "group of that name"
            )
        yield f"group {name}", f[name].attrs


def _read_attrs(f: h5py.File, version: int) -> dict[str, AttrValue]:
    """Every attribute as one flat dict, whichever schema laid the file out.

    A name stored in two places is refused: which value holds would be a guess.
    """
    attrs: dict[str, AttrValue] = {}
    seen: dict[str, str] = {}
    for place, manager in _attribute_places(f, version):
        for key in manager:
            shown = key.encode("utf-8", "backslashreplace").decode()
            try:
                key.encode("utf-8")
                value = _py(manager[key])
            except (UnicodeError, ValueError):
                raise TraceError(f"attribute {shown!r} in {place} is not valid UTF-8") from None
            if key in seen:
                raise TraceError(
                    f"attribute {shown!r} is stored twice, in {seen[key]} and in {place}; "
                    "delete one of them"
                )
            seen[key] = place
            if value is not None:
                attrs[key] = value
    return attrs


def file_attrs(f: h5py.File) -> dict[str, AttrValue]:
    """The attributes of the open trace file ``f`` as one flat dict, from any schema this
    ksptrace reads (the dict :attr:`Trace.attrs` holds, ``schema_version`` included).

    Raises TraceError (without the file name) when ``f`` has no valid ``schema_version`` or its
    attributes cannot be read.
    """
    if "schema_version" not in f.attrs:
        raise TraceError("not a ksptrace trace (no schema_version attribute)")
    version = schema_version_of(f.attrs["schema_version"])
    return _read_attrs(f, version)


def attrs_of(path: str | os.PathLike[str]) -> dict[str, AttrValue]:
    """The flat attributes of the trace file ``path`` (either schema), read in a forked child
    (:mod:`ksptrace.trace.probe`); TraceError when the file is not a readable trace."""
    p = Path(path)

    def read() -> dict[str, AttrValue]:
        try:
            with h5py.File(p, "r") as f:
                return file_attrs(f)
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise TraceError(f"{p}: not a readable trace ({exc})") from None

    return probe.in_child(read, p)


def _hostnames(raw: np.ndarray) -> tuple[str, ...]:
    try:
        return tuple(
            (h if isinstance(h, bytes | np.bytes_) else str(h).encode("utf-8")).decode("utf-8")
            for h in raw
        )
    except UnicodeError:
        raise TraceError("hostnames are not valid UTF-8") from None


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Read and validate one trace file; raise TraceError ``"<file>: <reason>"`` (one line).

    Both layouts are read: schema 1 (every attribute on the root) and schema 2 (attributes in
    the groups of :data:`ATTRIBUTE_GROUPS`); either gives the same flat :attr:`Trace.attrs`.
    The checks, in order: the file can be opened; ``schema_version`` is a positive integer this
    reader knows; every dataset exists with its kind, dtype and shape, and does not declare more
    data than the file can hold (all before any data are read); text is UTF-8; an attribute
    group is a group and no attribute is stored twice; node ids are 0-based indices below P;
    the timings are plausible (:meth:`Trace.timing_fault`).
    A file on which the HDF5 library itself crashes or hangs is refused too: the file is read
    once, in a forked child (:func:`_read_in_child`).
    """
    p = Path(path)
    file_bytes = probe.regular_file(p)
    if not hasattr(os, "fork"):
        return _read(p, file_bytes)
    return _read_in_child(p, file_bytes)


_HEADER = struct.Struct("<QQQ")
"""The shared map's header: status, offset and length of the pickled result."""
_OK, _REFUSED = 1, 2
_ALIGN = 64


def _read_in_child(p: Path, file_bytes: int) -> Trace:
    """Read ``p`` in a forked child and hand the trace back through shared memory.

    Damaged HDF5 metadata can crash libhdf5 (a segmentation fault while iterating attributes)
    or send it into an endless loop, both found by ``tests/trace/test_read_fuzz.py``; no Python
    handler catches either, and one such file would end or hang a whole analysis. So only a
    child touches the file, and it is killed after :data:`probe.PROBE_SECONDS` (plus a second per
    50 MB). The child reads each dataset straight into an anonymous shared map and pickles the
    trace's fields (protocol 5) with the arrays out of band, as spans of that map; the parent's
    arrays are views of the map. So the data are read once and never copied, and a trace costs
    its size in memory once, not twice. A trace the map cannot hold (it is sized from the file)
    is read again by the parent, which is safe once the child has read it without crashing.
    """
    shared = mmap.mmap(-1, _map_bytes(file_bytes))  # anonymous and MAP_SHARED: ours too
    pid = os.fork()
    if pid == 0:  # the child: read, then leave without exit handlers or crash reports
        try:
            faulthandler.disable()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)  # libc's own crash reports ("stack smashing detected")
            with contextlib.suppress(BaseException):
                _hand_over(shared, p, file_bytes)
        finally:
            os._exit(0)
    limit = probe.limit_for(file_bytes)
    fault = probe.fault_of(p, probe.wait(pid, limit), limit)
    if fault is not None:
        raise TraceError(fault)
    state, offset, length = _HEADER.unpack_from(shared, 0)
    if state == _REFUSED:
        raise TraceError(pickle.loads(shared[offset:offset + length]))
    if state != _OK:  # the map was too small, or the child ran out of memory: read here
        return _read(p, file_bytes)
    fields, spans = pickle.loads(shared[offset:offset + length])
    view = memoryview(shared).toreadonly()  # nothing else can write the map: Trace keeps it
    buffers = [view[start:start + size] for start, size in spans]
    return _make_trace(p, pickle.loads(fields, buffers=buffers))


class _MapFull(Exception):
    """The shared map cannot hold the trace (the parent then reads the file itself)."""


class _Carver:
    """Hands out aligned arrays from ``shared``, after its header, in the order asked."""

    def __init__(self, shared: mmap.mmap) -> None:
        self.shared = shared
        self.end = _ALIGN
        self.base = np.frombuffer(shared, np.uint8).ctypes.data

    def take(self, nbytes: int) -> int:
        start = self.end
        if start + nbytes > len(self.shared):
            raise _MapFull
        self.end = start + -(-nbytes // _ALIGN) * _ALIGN
        return start

    def array(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        count = int(np.prod(shape, dtype=np.int64))
        start = self.take(count * dtype.itemsize)
        return np.ndarray(shape, dtype=dtype, buffer=self.shared, offset=start)

    def span(self, raw: memoryview) -> tuple[int, int]:
        """Where ``raw`` lies in the map; a buffer from elsewhere is copied in first."""
        if raw.nbytes:
            start = np.frombuffer(raw, np.uint8).ctypes.data - self.base
            if start >= 0 and start + raw.nbytes <= len(self.shared):
                return start, raw.nbytes
        start = self.take(raw.nbytes)
        self.shared[start:start + raw.nbytes] = raw
        return start, raw.nbytes


def _map_bytes(file_bytes: int) -> int:
    """The shared map's size: room for the data of an uncompressed trace and its pickle.

    Only the pages the child writes cost memory; a compressed trace may not fit, and is then
    read by the parent.
    """
    return 2 * file_bytes + (16 << 20)


def _hand_over(shared: mmap.mmap, p: Path, file_bytes: int) -> None:
    """In the child: read ``p`` into ``shared`` and write the outcome (see :data:`_HEADER`).

    The child hands over the fields of the trace, not a :class:`Trace`: building one copies
    writable arrays, and the parent builds it (and runs its checks) on read-only views.
    """
    carver = _Carver(shared)
    try:
        values = _read_fields(p, file_bytes, carver.array)
    except TraceError as exc:
        message = pickle.dumps(str(exc))
        shared[_ALIGN:_ALIGN + len(message)] = message
        _HEADER.pack_into(shared, 0, _REFUSED, _ALIGN, len(message))
        return
    except _MapFull:
        return
    buffers: list[pickle.PickleBuffer] = []
    fields = pickle.dumps(values, protocol=5, buffer_callback=buffers.append)
    try:
        spans = [carver.span(buffer.raw()) for buffer in buffers]
        result = pickle.dumps((fields, spans))
        end = carver.take(len(result))
    except _MapFull:
        return
    shared[end:end + len(result)] = result
    _HEADER.pack_into(shared, 0, _OK, end, len(result))


Allocator = Callable[[tuple[int, ...], "np.dtype[Any]"], np.ndarray]
"""Makes the empty array a dataset is read into (shape, dtype)."""


def _load(dataset: h5py.Dataset, alloc: Allocator | None) -> np.ndarray:
    """A dataset's values, read straight into ``alloc``'s array where one is given."""
    if alloc is None or dataset.shape is None:
        return np.asarray(dataset[...])
    out = alloc(tuple(dataset.shape), dataset.dtype)
    if out.size:
        dataset.read_direct(out)
    return out


def _read(p: Path, file_bytes: int) -> Trace:
    """Read ``p`` here, in this process (see :func:`read_trace` for the checks)."""
    return _make_trace(p, _read_fields(p, file_bytes))


def _read_fields(p: Path, file_bytes: int, alloc: Allocator | None = None) -> dict[str, Any]:
    """The keyword arguments of ``p``'s :class:`Trace`, after the file-level checks."""
    try:
        f = h5py.File(p, "r")
    except PermissionError:
        raise TraceError(f"{p}: permission denied; make the file readable or copy it") from None
    except OSError:
        raise TraceError(
            f"{p}: not a readable HDF5 file (corrupt or truncated); rerun the run that made it"
        ) from None
    try:
        with f:
            if "schema_version" not in f.attrs:
                raise TraceError("not a ksptrace trace (no schema_version attribute)")
            version = schema_version_of(f.attrs["schema_version"])
            check_layout(f, file_bytes)
            solves = None
            if version >= 3 and SOLVES_GROUP in f:
                nprocs, nstamps = f["stamps"].shape
                solves = _read_solves(f, nprocs, nstamps, MAX_SIZE_RATIO * file_bytes + 2**20)
            return {
                "solves": solves,
                "stamps": _load(f["stamps"], alloc),
                "residual_norms": _load(f["residual_norms"], alloc),
                "node_ids": _load(f["node_ids"], alloc),
                "hostnames": _hostnames(f["hostnames"][...]),
                "solve_seconds": _load(f["solve_seconds"], alloc),
                "attrs": _read_attrs(f, version),
                "path": str(p),
                "injected_seconds": (
                    _load(f["injected_seconds"], alloc) if "injected_seconds" in f else None
                ),
            }
    except TraceError as exc:
        raise TraceError(f"{p}: {exc}") from None
    except _MapFull:
        raise
    except Exception as exc:  # any fault of an untrusted file makes a bad trace
        raise TraceError(_unreadable(p, exc)) from None


def _unreadable(p: Path, exc: BaseException) -> str:
    reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
    return f"{p}: unreadable trace ({reason}); rerun the run that made it"


def _make_trace(p: Path, fields: dict[str, Any]) -> Trace:
    """Build and check the :class:`Trace` of ``p`` from :func:`_read_fields`' result."""
    try:
        trace = Trace(**fields)
    except TraceError as exc:
        raise TraceError(f"{p}: {exc}") from None
    except Exception as exc:
        raise TraceError(_unreadable(p, exc)) from None
    check_finite(trace)
    return trace


def check_finite(trace: Trace) -> None:
    """Raise TraceError when a trace's timings are implausible (see :meth:`Trace.timing_fault`)."""
    fault = trace.timing_fault()
    if fault is not None:
        raise TraceError(f"{trace.path or trace.label}: {fault}; the trace cannot be analysed")


def iter_traces(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Trace | TraceError]:
    """Read traces one at a time: yield each valid Trace, or the TraceError of a bad one.

    The error's message is one line, ``"<file>: <reason>"``, so a caller can name the file once
    and go on with the rest. This is the one entry point for analyses of many traces.
    """
    for path in paths:
        try:
            yield read_trace(path)
        except TraceError as exc:
            yield exc
