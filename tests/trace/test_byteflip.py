"""One flipped byte, or a file that is no file: every reader of traces gives a result or one
TraceError, never a crash or a hang of the reading process (issue 27), and the intact traces
beside a bad one are still read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from ksptrace.errors import TraceError
from ksptrace.studies.collectives.synthetic import allreduce_traces
from ksptrace.trace import collectives, write
from ksptrace.trace.io import attrs_of, read_trace
from ksptrace.trace.synthetic import synthetic_trace
from tests.conftest import ROOT

MUTANTS = 60


def _collectives_trace(path: Path) -> Path:
    t = allreduce_traces(nprocs=(2,), algorithms=("ring",), sizes=(8, 64), repetitions=3)[0]
    return collectives.write(t, path)


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("originals")
    solver = write.write_trace(synthetic_trace(2, 30, 1, "cg", seed=1), folder / "s.h5")
    coll = _collectives_trace(folder / "c.h5")
    return {"solver": solver.read_bytes(), "collectives": coll.read_bytes()}


def _every_reader(path: Path) -> list[str]:
    """What each reader made of ``path``: a result kind or 'refused'; anything else raises."""
    seen = []
    for read in (read_trace, collectives.read, attrs_of):
        try:
            read(path)
            seen.append("ok")
        except TraceError as exc:
            seen.append("refused" if "\n" not in str(exc) else f"many lines: {exc}")
    seen.append(str(collectives.is_collectives(path)))
    return seen


def test_byte_flipped_traces_are_read_or_refused_in_this_process(
        tmp_path: Path, originals: dict[str, bytes]) -> None:
    rng = np.random.default_rng(27)
    outcomes: dict[str, int] = {}
    for i in range(MUTANTS):
        kind = ("solver", "collectives")[i % 2]
        data = bytearray(originals[kind])
        data[int(rng.integers(len(data)))] ^= int(rng.integers(1, 256))
        f = tmp_path / f"{kind}-{i}.h5"
        f.write_bytes(bytes(data))
        for seen in _every_reader(f):
            outcomes[seen] = outcomes.get(seen, 0) + 1
    assert not [k for k in outcomes if k.startswith("many lines")], outcomes
    assert outcomes.get("refused", 0) > 0  # the mutants did damage
    assert outcomes.get("ok", 0) > 0


def test_a_fifo_is_refused_without_blocking(tmp_path: Path,
                                            originals: dict[str, bytes]) -> None:
    fifo = tmp_path / "x.h5"
    os.mkfifo(fifo)
    good = tmp_path / "good.h5"
    good.write_bytes(originals["solver"])
    for argv in (["show", str(fifo), str(good)],
                 ["analyze", str(fifo), str(good), "--no-figures", "--quiet", "--no-cache",
                  "--out", str(tmp_path / "r")],
                 ["decide", str(fifo), "--out", str(tmp_path / "d"), "--quiet"]):
        done = subprocess.run([sys.executable, "-m", "ksptrace", *argv], capture_output=True,
                              text=True, timeout=120, cwd=ROOT, check=False,
                              stdin=subprocess.DEVNULL)
        assert done.returncode >= 0, done.stderr
        assert "not a regular file" in done.stderr, (argv[0], done.stderr)
        assert "Traceback" not in done.stderr
    assert (tmp_path / "r" / "report.html").is_file()


def test_a_malformed_collectives_trace_is_skipped_not_fatal(tmp_path: Path) -> None:
    good = _collectives_trace(tmp_path / "good.h5")
    bad = _collectives_trace(tmp_path / "bad.h5")
    with h5py.File(bad, "r+") as f:
        del f["seconds"]
    assert collectives.is_collectives(bad)
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "ksptrace", "analyze", str(bad), str(good),
                           "--out", str(out), "--no-figures", "--quiet"], capture_output=True,
                          text=True, timeout=240, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert f"skipped cannot read {bad}" in done.stderr
    assert "1 skipped" in done.stdout
    assert "skipped cannot read" in (out / "collectives.html").read_text()


@pytest.mark.slow
def test_the_fuzz_bench_finds_no_crash_hang_or_lost_trace(tmp_path: Path) -> None:
    """bench/fuzz_read.py on a small batch: every reading command over mutants of solver,
    collectives and record traces (the full run, 2,000 mutants, is the benchmark)."""
    out = tmp_path / "fuzz.json"
    done = subprocess.run([sys.executable, "bench/fuzz_read.py", "--mutants", "24",
                           "--batch", "24", "--seed", "3", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
