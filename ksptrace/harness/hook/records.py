"""The raw files the solve hook (``solve_hook.c``) writes, one per traced process, read back.

A file is a 1536-byte header (magic, format version, the rank and size of PETSc's world, the
process id, this PETSc's integer and real sizes, whether MPI is Open MPI, the host name, the
PETSc version string and the path of the libpetsc that was loaded), then records, each led by
its kind: a recorded solve (its KSP, depth, times, names, stamps and norms, and with MPI wait
accounting the interposer's running totals at each stamp), the wait accounting's summary
(installed or why not, and what each MPI entry point carried over the program), a KSP summary
(written at exit: how many of its solves were left out, at which depth, whether it is a
direct solver the hook leaves alone), a note, and an end mark. Nothing is unpickled or
executed: the bytes are read as numbers and text, and a file that does not parse is reported
with where it stops.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.errors import TraceError

MAGIC = 0x4B535054
VERSION = 3
HEADER_BYTES = 1536
NAME = 64
_SOLVE = struct.Struct(f"<8i4q4d{4 * NAME}s")
_KSP = struct.Struct(f"<8iq{2 * NAME}s")
_NOTE_BYTES = 256
WAIT_ENTRIES, WAIT_NAME = 32, 32
_WAITS = struct.Struct(f"<4i{2 * WAIT_ENTRIES}d{WAIT_ENTRIES * WAIT_NAME}s")
KIND_SOLVE, KIND_KSP, KIND_NOTE, KIND_WAITS, KIND_SPANS, KIND_END = 1, 2, 3, 4, 5, 9
_SPANS = struct.Struct("<2iqd")
WAIT_STATUS = {
    0: "not asked", -1: "a PLT slot of libpetsc could not be made writable",
    -2: "an MPI entry point libpetsc calls was not found in the loaded libraries",
    -3: "the interposer could not be loaded", -4: "the interposer lacks a function",
    -5: "no loaded library named like 'libpetsc' calls an MPI reduction through its PLT",
}
"""Why the hook's wait accounting is off, by its status (waits.c; 1: installed)."""


@dataclass(frozen=True)
class SolveRecord:
    """One recorded KSPSolve on one process."""

    ksp: int
    depth: int
    setup: bool
    comm_size: int
    reason: int
    reason_name: str
    refused: bool
    iterations: int
    lost: bool
    rows: int
    begin: float
    end: float
    setup_inside: float
    setup_before: float
    ksp_type: str
    pc_type: str
    prefix: str
    stamps: np.ndarray
    norms: np.ndarray
    marks: np.ndarray | None = None
    """[count, 2]: the wait interposer's running totals (seconds, reductions) at each stamp,
    or None without wait accounting."""


@dataclass(frozen=True)
class WaitSummary:
    """The hook's MPI wait accounting in one process: installed or not, and what each entry
    point carried over the whole program (seconds counted, calls)."""

    status: int
    """1: installed; 0: not asked; negative: why not (:data:`WAIT_STATUS`)."""
    entry_points: tuple[str, ...]
    """The MPI entry points whose slots in libpetsc were rewritten."""
    by_entry: dict[str, tuple[float, float]]
    events: tuple[str, ...] = ()
    """The PETSc functions whose slots were rewritten to time them (``trace --events``)."""

    @property
    def installed(self) -> bool:
        return self.status == 1

    def why_not(self) -> str:
        return WAIT_STATUS.get(self.status, f"status {self.status}")


@dataclass(frozen=True)
class KspSummary:
    """One KSP this process saw, with the solves of it that were left out."""

    ksp: int
    comm_size: int
    min_depth: int
    setup_seen: bool
    recorded: int
    refused: bool
    skipped: int
    ksp_type: str
    prefix: str
    direct: bool = False
    """A selected KSP of type preonly: its solves were left alone (no monitor)."""


@dataclass(frozen=True)
class RankFile:
    """What one traced process wrote."""

    path: str
    rank: int
    size: int
    pid: int
    int_bytes: int
    real_bytes: int
    open_mpi: bool
    hostname: str
    petsc_version: str
    petsc_library: str
    solves: tuple[SolveRecord, ...]
    ksps: tuple[KspSummary, ...]
    notes: tuple[str, ...]
    complete: bool
    waits: WaitSummary | None = None
    """The wait accounting's record (None: the process ended before writing it)."""
    spans: np.ndarray | None = None
    """[n, 3] the event spans (start, end, kind) of ``trace --events``, or None."""


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse(data: bytes, path: str = "?") -> RankFile:
    """The records of one raw file; TraceError saying where it is broken."""
    if len(data) < HEADER_BYTES:
        raise TraceError(f"{path}: {len(data)} bytes, shorter than the hook's header")
    ints = struct.unpack_from("<8i", data, 0)
    if ints[0] != MAGIC or ints[1] != VERSION:
        raise TraceError(f"{path}: not a file of this ksptrace's solve hook (format {ints[1]})")
    solves: list[SolveRecord] = []
    ksps: list[KspSummary] = []
    notes: list[str] = []
    waits: WaitSummary | None = None
    spans: np.ndarray | None = None
    at, complete = HEADER_BYTES, False
    try:
        while at < len(data):
            (kind,) = struct.unpack_from("<i", data, at)
            if kind == KIND_SOLVE:
                record, at = _solve(data, at)
                solves.append(record)
            elif kind == KIND_KSP:
                k = _KSP.unpack_from(data, at)
                ksps.append(KspSummary(k[1], k[2], k[3], bool(k[4]), k[5], bool(k[6]), k[8],
                                       _text(k[9][:NAME]), _text(k[9][NAME:]), bool(k[7])))
                at += _KSP.size
            elif kind == KIND_WAITS:
                waits = _waits(_WAITS.unpack_from(data, at))
                at += _WAITS.size
            elif kind == KIND_SPANS:
                spans, at = _spans(data, at, path)
            elif kind == KIND_NOTE:
                notes.append(_text(data[at + 4:at + 4 + _NOTE_BYTES]))
                at += 4 + _NOTE_BYTES
            elif kind == KIND_END:
                complete = at + 4 == len(data)
                break
            else:
                raise TraceError(f"{path}: unknown record kind {kind} at byte {at}")
    except struct.error:
        complete = False  # cut short: the process died while writing
    return RankFile(path, ints[2], ints[3], ints[4], ints[5], ints[6], bool(ints[7]),
                    _text(data[32:288]), _text(data[288:544]), _text(data[544:HEADER_BYTES]),
                    tuple(solves), tuple(ksps), tuple(notes), complete, waits, spans)


def _spans(data: bytes, at: int, path: str) -> tuple[np.ndarray, int]:
    _, _, count, dropped = _SPANS.unpack_from(data, at)
    start = at + _SPANS.size
    end = start + 24 * count
    if count < 0 or end > len(data):
        raise struct.error("spans record cut short")
    if dropped:
        raise TraceError(f"{path}: {dropped:.0f} event spans were lost for want of memory; "
                         "trace without --events")
    return np.frombuffer(data, np.float64, 3 * count, start).reshape(count, 3).copy(), end


def _waits(v: tuple[Any, ...]) -> WaitSummary:
    status, patched, count = v[1], v[2] & 0xFFFFFFFF, min(max(v[3], 0), WAIT_ENTRIES)
    values, names = v[4:4 + 2 * WAIT_ENTRIES], v[-1]
    named = [_text(names[e * WAIT_NAME:(e + 1) * WAIT_NAME]) for e in range(count)]
    rewritten = [(e, n) for e, n in enumerate(named) if patched >> e & 1]
    entry_points = tuple(n for _, n in rewritten if n.startswith("MPI_"))
    by_entry = {n: (float(values[2 * e]), float(values[2 * e + 1]))
                for e, n in rewritten if n.startswith("MPI_")}
    events = tuple(n for _, n in rewritten if not n.startswith("MPI_"))
    return WaitSummary(status, entry_points, by_entry, events)


def _solve(data: bytes, at: int) -> tuple[SolveRecord, int]:
    v = _SOLVE.unpack_from(data, at)
    its, count, lost, rows = v[8:12]
    marked = bool(v[7])
    start = at + _SOLVE.size
    end = start + (32 if marked else 16) * count
    if count < 0 or end > len(data):
        raise struct.error("solve record cut short")
    stamps = np.frombuffer(data, np.float64, count, start).copy()
    norms = np.frombuffer(data, np.float64, count, start + 8 * count).copy()
    marks = (np.frombuffer(data, np.float64, 2 * count, start + 16 * count).reshape(count, 2)
             .copy() if marked else None)
    names = v[16]
    return SolveRecord(v[1], v[2], bool(v[3]), v[4], v[5], _text(names[3 * NAME:]), bool(v[6]),
                       its, bool(lost), rows, v[12], v[13], v[14], v[15], _text(names[:NAME]),
                       _text(names[NAME:2 * NAME]), _text(names[2 * NAME:3 * NAME]), stamps,
                       norms, marks), end


def _image(name: str) -> int:
    """Which program of its process a file is: 0, or k of ``rank-<rank>-<pid>-<k>.bin`` (the
    k-th program the process became by exec)."""
    found = re.fullmatch(r"rank-\d+-\d+-(\d+)\.bin", name)
    return int(found.group(1)) if found else 0


def merge_images(files: list[RankFile]) -> list[RankFile]:
    """The files of one process (one rank) that became other programs by exec, as one: their
    solves in order, each program's KSP numbers moved past the previous program's."""
    groups: dict[tuple[int, int], list[RankFile]] = {}
    for f in sorted(files, key=lambda f: (f.rank, f.pid, _image(f.path))):
        groups.setdefault((f.rank, f.pid), []).append(f)
    merged = []
    for group in groups.values():
        first, shift = group[0], 0
        solves: list[SolveRecord] = []
        ksps: list[KspSummary] = []
        for f in group:
            solves += [replace(r, ksp=r.ksp + shift) for r in f.solves]
            ksps += [replace(k, ksp=k.ksp + shift if k.ksp >= 0 else k.ksp) for k in f.ksps]
            shift += 1 + max([r.ksp for r in f.solves] + [k.ksp for k in f.ksps] + [-1])
        merged.append(replace(first, solves=tuple(solves), ksps=tuple(ksps),
                              notes=tuple(n for f in group for n in f.notes),
                              complete=all(f.complete for f in group),
                              waits=_merge_waits([f.waits for f in group]),
                              spans=None if any(f.spans is None for f in group)
                              else np.concatenate([f.spans for f in group if f.spans is not None])))
    return merged


def _merge_waits(found: list[WaitSummary | None]) -> WaitSummary | None:
    """The wait accounting of a process's programs as one: installed when it was in each."""
    if any(w is None for w in found):
        return None
    summaries = [w for w in found if w is not None]
    status = next((w.status for w in summaries if not w.installed), summaries[0].status)
    by_entry: dict[str, tuple[float, float]] = {}
    for w in summaries:
        for name, (seconds, calls) in w.by_entry.items():
            old = by_entry.get(name, (0.0, 0.0))
            by_entry[name] = (old[0] + seconds, old[1] + calls)
    points = tuple(dict.fromkeys(n for w in summaries for n in w.entry_points))
    events = tuple(dict.fromkeys(n for w in summaries for n in w.events))
    return WaitSummary(status, points, by_entry, events)


def read_folder(folder: Path) -> list[RankFile]:
    """Every process's file in the hook's private folder, by rank (a process's programs, when
    it became others by exec, as one)."""
    found = [parse(p.read_bytes(), p.name) for p in sorted(folder.glob("rank-*.bin"))]
    return merge_images(found)
