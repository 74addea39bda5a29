"""``ksptrace timeline``: trace-event JSON checked against the format's documented rules, the
numbers it draws against the trace's, windows, several solves, and memory at paper scale."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.trace.model import Solves, Trace
from ksptrace.trace.timeline import events, write_timeline
from ksptrace.trace.write import write_trace
from tests.conftest import ROOT
from tests.trace.test_io import make_trace

PHASES = {"X", "M", "i"}
METADATA = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def check_format(doc: dict[str, Any]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """The Trace Event Format's rules for the events used (Chrome's 'Trace Event Format'
    document: JSON Object Format, complete 'X', instant 'i', metadata 'M' events), and the
    nesting Perfetto needs of complete events on one track; the 'X' events by track."""
    assert set(doc) <= {"traceEvents", "displayTimeUnit", "otherData"}
    assert doc["displayTimeUnit"] in ("ms", "ns")
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES, e
        assert isinstance(e["name"], str)
        assert isinstance(e["pid"], int)
        assert isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in METADATA
            assert isinstance(e["args"], dict)
            continue
        assert isinstance(e["ts"], int | float)
        assert e["ts"] >= 0
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t")
            continue
        assert isinstance(e["dur"], int | float)
        assert e["dur"] >= 0
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for slices in tracks.values():  # each slice lies inside the one it starts in, or after it
        stack: list[float] = []
        for e in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
            while stack and e["ts"] >= stack[-1] - 1e-3:
                stack.pop()
            if stack:
                assert e["ts"] + e["dur"] <= stack[-1] + 2e-3, e
            stack.append(e["ts"] + e["dur"])
    return tracks


def traced(nprocs: int = 3, k: int = 6) -> Trace:
    trace = make_trace(nprocs, k)
    trace = dataclasses.replace(trace, attrs={**trace.attrs, "solution_error": float("nan")})
    rng = np.random.default_rng(1)
    waits = trace.iteration_seconds * rng.uniform(0.0, 0.5, size=(nprocs, k))
    injected = np.zeros((nprocs, k))
    injected[1, 2] = 5e-5
    return dataclasses.replace(trace, wait_seconds=waits,
                               mpi_calls=np.full((nprocs, k), 2, dtype=np.int64),
                               injected_seconds=injected)


def _write(trace: Trace, tmp: Path, **kw: Any) -> dict[str, Any]:
    src = write_trace(trace, tmp / "t.h5")
    write_timeline(src, tmp / "t.json", **kw)
    return json.loads((tmp / "t.json").read_text())


def test_the_timeline_draws_the_traces_numbers(tmp_path: Path) -> None:
    trace = traced()
    doc = _write(trace, tmp_path)
    tracks = check_format(doc)
    assert set(tracks) == {(int(trace.node_ids[p]), p) for p in range(trace.nprocs)}
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {f"node {n} (node{n})" for n in np.unique(trace.node_ids)}
    for (_, rank), slices in tracks.items():
        its = [e for e in slices if e["name"].startswith("iteration ")]
        assert [e["args"]["k"] for e in its] == list(range(1, trace.iterations + 1))
        np.testing.assert_allclose([e["dur"] for e in its],
                                   trace.iteration_seconds[rank] * 1e6, atol=2e-3)
        assert trace.wait_seconds is not None
        np.testing.assert_allclose([e["args"]["wait_us"] for e in its],
                                   trace.wait_seconds[rank] * 1e6, atol=1e-3)
        waits = [e for e in slices if e["name"] == events.WAIT_SLICE]
        np.testing.assert_allclose([e["dur"] for e in waits], trace.wait_seconds[rank] * 1e6,
                                   atol=2e-3)
        for w, it in zip(waits, its, strict=True):  # drawn at the iteration's end
            assert w["ts"] + w["dur"] == pytest.approx(it["ts"] + it["dur"], abs=2e-3)
        (solve,) = [e for e in slices if e["name"] == "KSPSolve"]
        assert solve["dur"] == pytest.approx(trace.solve_seconds[rank] * 1e6, abs=2e-3)
    detours = [e for e in doc["traceEvents"] if e["name"] == "detour"]
    assert [(e["tid"], e["args"]["k"], e["args"]["seconds"]) for e in detours] == [(1, 3, 5e-5)]
    other = doc["otherData"]
    assert other["trace_attributes"]["ksp"] == "gmres"
    assert other["trace_attributes"]["solution_error"] == "nan"  # JSON has no NaN
    assert other["clocks"] == events.CLOCKS


def test_windows_keep_only_the_ranks_and_iterations_asked(tmp_path: Path) -> None:
    doc = _write(traced(), tmp_path, ranks="1:3", iterations="2:4")
    tracks = check_format(doc)
    assert sorted(tid for _, tid in tracks) == [1, 2]
    for slices in tracks.values():
        assert [e["args"]["k"] for e in slices if e["name"].startswith("iteration ")] == [2, 3]
    assert doc["otherData"]["iterations"] == "2:4"


@pytest.mark.parametrize(("text", "message"), [
    ("3:1", "outside the trace's ranks 0 to 2, or empty"),
    ("0:9", "outside"),
    ("a:b", "is not a range"),
    ("1:2:3", "is not a range"),
])
def test_bad_windows_are_refused(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        events.parse_window(text, 0, 3, "ranks")


def test_a_window_parses_as_a_python_range() -> None:
    assert events.parse_window("2:", 1, 10, "iterations") == events.Window(2, 10)
    assert events.parse_window(":3", 1, 10, "iterations") == events.Window(1, 3)
    assert events.parse_window("4", 1, 10, "iterations") == events.Window(4, 5)
    assert events.parse_window(None, 0, 5, "ranks") == events.Window(0, 5)


def test_a_trace_without_waits_draws_no_wait(tmp_path: Path) -> None:
    doc = _write(make_trace(), tmp_path)
    check_format(doc)
    assert not [e for e in doc["traceEvents"] if e["name"] == events.WAIT_SLICE]


def test_several_solves_are_parents_and_the_gaps_no_iteration(tmp_path: Path) -> None:
    base = make_trace(2, 7)  # 8 stamps: solves of 3 and 5 monitor calls
    stamps = np.array(base.stamps)
    stamps[:, 3:] += 0.5  # a gap between the solves
    solves = Solves(np.array([0, 3, 8]), np.full((2, 2), 0.2), ("A", "B"), np.array([2, 4]))
    trace = Trace(stamps, base.residual_norms, base.node_ids, base.hostnames,
                  np.full(2, 0.4), base.attrs, solves=solves,
                  wait_seconds=np.full((2, 6), 1e-6), mpi_calls=np.ones((2, 6), dtype=np.int64))
    doc = _write(trace, tmp_path)
    for slices in check_format(doc).values():
        assert len([e for e in slices if e["name"] == "KSPSolve"]) == 2
        its = [e for e in slices if e["name"].startswith("iteration ")]
        assert len(its) == 6
        assert max(e["dur"] for e in its) < 0.4e6  # none spans the gap


def test_the_cli_writes_it_and_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    src = write_trace(traced(), tmp_path / "t.h5")
    run = [sys.executable, "-m", "ksptrace", "timeline", str(src)]
    ok = subprocess.run([*run, "--out", str(tmp_path / "a.json")], capture_output=True,
                        text=True, cwd=ROOT, timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "ranks 0 to 2, iterations 1 to 6" in ok.stdout
    bad = subprocess.run([*run, "--out", str(tmp_path / "b.json"), "--ranks", "5:9"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1
    assert "--ranks '5:9' is outside" in bad.stderr
    assert not (tmp_path / "b.json").exists()
    assert not list(tmp_path.glob(".b.json*"))


def paper_scale_file(path: Path, nprocs: int = 8192, k: int = 5000) -> Path:
    """A trace file of paper scale whose datasets take their full size on paper but not on
    disk (allocated early, never filled: a sparse file), with real values written only where
    the tests draw: the last 10 iterations of every rank and every iteration of ranks 0-39."""
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = 2
        for name, shape, dtype in (("stamps", (nprocs, k + 1), "f8"),
                                   ("iteration_seconds", (nprocs, k), "f8"),
                                   ("residual_norms", (k + 1,), "f8"),
                                   ("wait_seconds", (nprocs, k), "f8"),
                                   ("mpi_calls", (nprocs, k), "i8")):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(np.dtype(dtype)),
                            h5py.h5s.create_simple(shape), dcpl=dcpl)
        f["node_ids"] = np.arange(nprocs) // 64
        f["hostnames"] = np.array([f"n{p // 64}".encode() for p in range(nprocs)], dtype="S65")
        f["solve_seconds"] = np.full(nprocs, 1.0)
        tail = 1e-3 * (k - 10 + np.arange(11))
        f["stamps"][:, k - 10:] = np.broadcast_to(tail, (nprocs, 11))
        f["wait_seconds"][:, k - 10:] = 1e-5
        f["mpi_calls"][:, k - 10:] = 2
        f["stamps"][:40] = np.broadcast_to(1e-3 * np.arange(k + 1), (40, k + 1))
        f["stamps"][:40, 0] = 0.0
        f["wait_seconds"][:40] = 1e-5
    return path


@pytest.fixture(scope="module")
def paper_scale(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return paper_scale_file(tmp_path_factory.mktemp("paper") / "big.h5")


@pytest.mark.parametrize(("ranks", "iterations"), [(None, "4996:5001"), ("0:20", None)])
def test_memory_stays_bounded_at_paper_scale(paper_scale: Path, tmp_path: Path,
                                             ranks: str | None, iterations: str | None) -> None:
    """8192 ranks x 5000 iterations (1.3 GB of arrays): all ranks over the last 5
    iterations, and 20 ranks over all 5000, each drawn in less than 40 MB (measured: 3.9 and
    7.2 MiB at the peak)."""
    src = paper_scale
    tracemalloc.start()
    try:
        done = write_timeline(src, tmp_path / "big.json", ranks=ranks, iterations=iterations)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    drawn = done.ranks.size * done.iterations.size
    assert drawn in (8192 * 5, 20 * 5000)
    assert done.waits
    assert peak < 40 * 2**20, peak
    assert (tmp_path / "big.json").stat().st_size > 100 * drawn  # every iteration was written
