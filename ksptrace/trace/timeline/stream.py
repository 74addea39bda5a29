"""Writing a trace's timeline as trace-event JSON, streaming, in bounded memory.

The trace is never read whole: ranks are read in blocks (as many as fit :data:`BLOCK_BYTES`
per dataset for the iterations asked for) straight from the HDF5 file, and each rank's events
are written before the next rank's are made. Memory is then about four blocks and one rank's
text, whatever the number of ranks; at 8192 ranks x 5000 iterations the arrays alone would take
1.3 GB. The file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import h5py
import numpy as np

from ksptrace.errors import OutputError, TraceError
from ksptrace.trace import probe
from ksptrace.trace.checks import MAX_SIZE_RATIO, check_layout, read_solves, schema_version_of
from ksptrace.trace.fields import file_attrs
from ksptrace.trace.layout import SOLVES_GROUP
from ksptrace.trace.publish import check_destination, describe_write_error, publish
from ksptrace.trace.temporaries import temp_path_for
from ksptrace.trace.timeline import events
from ksptrace.trace.timeline.events import SolveSpan, Window
from ksptrace.version import __version__

BLOCK_BYTES = 4 * 2**20
"""Bytes of one dataset read at once (a block of ranks)."""


@dataclass(frozen=True)
class Written:
    """What a timeline holds."""

    path: Path
    ranks: Window
    iterations: Window
    """1-based iterations, ``stop`` excluded."""
    events: int
    waits: bool
    """Whether the trace had wait times to draw."""


@dataclass(frozen=True)
class _Source:
    f: h5py.File
    attrs: dict[str, Any]
    offsets: np.ndarray | None
    seconds: np.ndarray  # [P, S]: each solve's time on each rank
    ends: np.ndarray
    node_ids: np.ndarray
    hostnames: list[str]


def _open(path: Path) -> _Source:
    size = probe.regular_file(path)
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise TraceError(f"{path}: not a readable HDF5 file (corrupt or truncated); rerun the "
                         "run that made it") from None
    try:
        attrs = file_attrs(f)
        version = schema_version_of(f.attrs["schema_version"])
        check_layout(f, size)
        nprocs, nstamps = f["stamps"].shape
        solves = None
        if version >= 3 and SOLVES_GROUP in f:
            solves = read_solves(f, nprocs, nstamps, MAX_SIZE_RATIO * size + 2**20)
        offsets = None if solves is None else solves.offsets
        seconds = (np.asarray(f["solve_seconds"][...])[:, None] if solves is None
                   else solves.seconds)
        names = [h.decode("utf-8", "replace") if isinstance(h, bytes) else str(h)
                 for h in f["hostnames"][...]]
        return _Source(f, attrs, offsets, seconds, events.iteration_ends(nstamps, offsets),
                       np.asarray(f["node_ids"][...], dtype=np.int64), names)
    except TraceError as exc:
        f.close()
        raise TraceError(f"{path}: {exc}") from None
    except BaseException:
        f.close()
        raise


def _spans(src: _Source, ranks: Window, its: Window) -> list[list[SolveSpan]]:
    """For each rank of the window, its solves that hold an iteration of the window."""
    offsets = src.offsets if src.offsets is not None else np.array([0, src.ends[-1] + 1])
    stamps = src.f["stamps"]
    out: list[list[SolveSpan]] = [[] for _ in range(ranks.size)]
    first_col, last_col = src.ends[its.start - 1], src.ends[its.stop - 2]
    for s in range(offsets.size - 1):
        lo, hi = int(offsets[s]), int(offsets[s + 1]) - 1
        if hi < first_col or lo >= last_col:
            continue
        first = np.asarray(stamps[ranks.start:ranks.stop, lo])
        last = np.asarray(stamps[ranks.start:ranks.stop, hi])
        setup = src.seconds[ranks.start:ranks.stop, s] - (last - first)
        setup = np.where(np.isfinite(setup) & (setup > 0), setup, 0.0)
        for r in range(ranks.size):
            out[r].append(SolveSpan(s, float(first[r] - setup[r]), float(first[r]),
                                    float(last[r])))
    return out


def _blocks(total: int, per_rank: int) -> Iterator[tuple[int, int]]:
    step = max(1, BLOCK_BYTES // max(per_rank * 8, 1))
    for start in range(0, total, step):
        yield start, min(start + step, total)


def _check_block(stamps: np.ndarray, first_rank: int) -> None:
    bad = ~np.isfinite(stamps)
    if bad.any():
        r = int(np.argwhere(bad)[0][0]) + first_rank
        raise TraceError(f"stamps of rank {r} hold NaN or inf; the trace cannot be drawn")


def _write_events(out: IO[str], src: _Source, ranks: Window, its: Window) -> tuple[int, bool]:
    f = src.f
    lo, hi = int(src.ends[its.start - 1]) - 1, int(src.ends[its.stop - 2])
    spans = _spans(src, ranks, its)
    starts_t = [s.start for rank in spans for s in rank]
    t0 = float(np.min(f["stamps"][ranks.start:ranks.stop, lo]))
    t0 = min([t0, *starts_t])
    ends = src.ends[its.start - 1:its.stop - 1] - lo
    waits = "wait_seconds" in f and "mpi_calls" in f
    injected = "injected_seconds" in f
    timed = "event_seconds" in f
    seen: set[int] = set()
    count = 0
    sep = ""
    for b0, b1 in _blocks(ranks.size, hi - lo + 1):
        r0, r1 = ranks.start + b0, ranks.start + b1
        stamps = np.asarray(f["stamps"][r0:r1, lo:hi + 1])
        _check_block(stamps, r0)
        cols = slice(its.start - 1, its.stop - 1)
        wait = np.asarray(f["wait_seconds"][r0:r1, cols]) if waits else None
        calls = np.asarray(f["mpi_calls"][r0:r1, cols]) if waits else None
        detours = np.asarray(f["injected_seconds"][r0:r1, cols]) if injected else None
        kinds = np.asarray(f["event_seconds"][r0:r1, cols]) if timed else None
        for i in range(r1 - r0):
            rank = r0 + i
            node = int(src.node_ids[rank])
            lines = [*events.track_names(rank, node, src.hostnames[rank], node not in seen),
                     *events.solve_events(rank, node, t0, spans[rank - ranks.start]),
                     *events.iteration_events(
                         rank, node, t0, its.start, stamps[i, ends - 1], stamps[i, ends],
                         None if wait is None else wait[i], None if calls is None else calls[i],
                         None if detours is None else detours[i],
                         None if kinds is None else kinds[i])]
            seen.add(node)
            out.write(sep + ",\n".join(lines))
            sep = ",\n"
            count += len(lines)
    return count, waits


def _json_value(value: Any) -> Any:
    """An attribute as JSON has it: a non-finite number as text (JSON has no NaN)."""
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)
    return value


def _provenance(src: _Source, path: Path, ranks: Window, its: Window) -> dict[str, Any]:
    return {
        "generator": f"ksptrace {__version__} timeline",
        "trace": str(path),
        "ranks": f"{ranks.start}:{ranks.stop}",
        "iterations": f"{its.start}:{its.stop}",
        "clocks": events.CLOCKS,
        "wait_slices": events.WAIT_PLACEMENT,
        **({"event_slices": events.EVENT_PLACEMENT} if "event_seconds" in src.f else {}),
        "trace_attributes": {k: _json_value(v) for k, v in sorted(src.attrs.items())},
    }


def write_timeline(path: Path, out: Path, ranks: str | None = None,
                   iterations: str | None = None, overwrite: bool = False) -> Written:
    """Write the timeline of the trace at ``path`` into ``out`` (JSON), for the ranks and
    iterations windows given (``A:B``; all when None)."""
    check_destination(out, overwrite)
    src = _open(path)
    with src.f:
        nprocs = int(src.f["stamps"].shape[0])
        r = events.parse_window(ranks, 0, nprocs, "ranks")
        its = events.parse_window(iterations, 1, int(src.ends.size) + 1, "iterations")
        tmp = temp_path_for(out)
        try:
            with open(tmp, "x", encoding="utf-8") as fh:
                fh.write('{"traceEvents":[\n')
                count, waits = _write_events(fh, src, r, its)
                fh.write('\n],\n"displayTimeUnit":"ms",\n"otherData":')
                json.dump(_provenance(src, path, r, its), fh, allow_nan=False)
                fh.write("}\n")
            publish(tmp, out, overwrite)
        except OSError as exc:
            raise OutputError(describe_write_error(exc, out, 0)) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return Written(out, r, its, count, waits)
