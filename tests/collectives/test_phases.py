"""The phases Open MPI's segmented-ring allreduce runs (issue 66: a segmented ring that ran in
one phase, m = P x segment, was labelled segmented): the count as
``ompi_coll_base_allreduce_intra_ring_segmented`` computes it, recorded per size in the trace at
measurement time, and checked under ``mpiexec -n 2`` against the pieces a user-defined sum is
handed. At P = 2 each phase reduces one piece on each rank, so the number of calls of the sum
on rank 0 is the number of phases (the plain ring: one call)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from ksptrace.collectives import fallbacks
from ksptrace.collectives.algorithms import ompi_catalogue
from ksptrace.trace import collectives as ctrace
from tests.conftest import ROOT, solver_env


@pytest.mark.parametrize(("count", "nprocs", "type_bytes", "seg", "phases"), [
    (256, 2, 8, 1024, 1),      # m = P x segment: 128 elements a segment, 256 = 2 x 128
    (255, 2, 8, 1024, None),   # fewer than P segments: the plain ring
    (257, 2, 8, 1024, 1),      # remainder 1 < P: no extra phase
    (356, 2, 8, 1024, 1),      # remainder 100 is not more than half of 256
    (384, 2, 8, 1024, 1),      # remainder 128 is half, not more
    (385, 2, 8, 1024, 2),      # remainder 129 > 128 and >= P
    (456, 2, 8, 1024, 2),
    (768, 2, 8, 1024, 3),
    (7, 4, 8, 8, 1),           # remainder 3 > 4 / 2 but < P = 4: no extra phase
    (12, 4, 8, 16, 1),         # 2 elements a segment: remainder 4 >= P, not more than half
    (13, 4, 8, 16, 2),         # remainder 5 >= P and more than half of 8
    (384, 3, 8, 1021, 1),      # 1021 B: 127 elements + 5 B > half an element: 128
    (762, 3, 8, 1020, 2),      # 1020 B: 127 elements (4 B is not more than half): 2 x 381
    (4096, 4, 8, 0, None),     # no segment size: one segment of everything, the plain ring
    (4096, 4, 8, 4, None),     # a segment smaller than one element: the same
    (4096, 4, 8, 32768, None),  # a segment not smaller than the message: the same
    (3444, 2, 1, 1024, 2),     # bytes: 1024 a segment, remainder 1396 > 1024
    (6889, 2, 1, 1024, 3),     # remainder 745 is not more than 1024
    (4096, 1, 8, 1024, None),  # one rank: a copy, no phase
])
def test_the_phase_count(count: int, nprocs: int, type_bytes: int, seg: int,
                         phases: int | None) -> None:
    assert fallbacks.segmented_ring_phases(count, nprocs, type_bytes, seg) == phases
    ran = fallbacks.openmpi_allreduce("segmented_ring", count, nprocs, type_bytes, seg)
    assert (ran == "segmented_ring") == (phases is not None or nprocs < 2)


def test_phases_per_size_only_where_the_segmented_ring_ran() -> None:
    sizes = [8, 1024, 2048, 3000, 4096, 8192]  # float64: 1, 128, 256, 375, 512, 1024 elements
    assert fallbacks.phases_per_size("openmpi", "allreduce", "segmented_ring", sizes, 2,
                                     1024) == {2048: 1, 3000: 1, 4096: 2, 8192: 4}
    assert fallbacks.phases_per_size("openmpi", "allreduce", "segmented_ring", sizes, 4,
                                     1024) == {4096: 1, 8192: 2}
    assert fallbacks.phases_per_size("openmpi", "allreduce", "segmented_ring", sizes, 2,
                                     0) == {}
    assert fallbacks.phases_per_size("openmpi", "allreduce", "ring", sizes, 2, 0) is None
    assert fallbacks.phases_per_size("mpich", "allreduce", "segmented_ring", sizes, 2) is None
    assert fallbacks.phases_per_size("openmpi", "bcast", "segmented_ring", sizes, 2) is None


PHASE_PROBE = """
import sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
for nbytes in map(int, sys.argv[1:]):
    dtype = np.float64 if nbytes % 8 == 0 else np.uint8
    calls = []
    def add(inbuf, outbuf, datatype, calls=calls, dtype=dtype):  # once per piece it reduces
        b = np.frombuffer(outbuf, dtype=dtype)
        b += np.frombuffer(inbuf, dtype=dtype)
        calls.append(b.size)
    op = MPI.Op.Create(add, commute=True)
    x = np.ones(nbytes // np.dtype(dtype).itemsize, dtype)
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=op)
    op.Free()
    assert y[0] == comm.Get_size()
    if comm.Get_rank() == 0:
        print(nbytes, len(calls), max(calls), flush=True)
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksptrace", *args], env=solver_env(),
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)


@pytest.mark.mpi
def test_recorded_phases_are_what_open_mpi_ran_and_the_report_labels_them(
        tmp_path: Path) -> None:
    """A forced segmented ring with 1 KiB segments at P = 2 over 1-8 KiB, four sizes per
    doubling (float64 and byte messages): ``segment_phases`` holds, at every size where it ran,
    the number of pieces Open MPI handed a user-defined sum on rank 0; the report labels the
    one-phase sizes, and a trace without the field reads as before, noted."""
    if shutil.which("mpiexec") is None or shutil.which("ompi_info") is None:
        pytest.skip("needs Open MPI's mpiexec and ompi_info")
    common = ("--np", "2", "--min-bytes", "1K", "--max-bytes", "8K", "--per-octave", "4",
              "--repetitions", "3", "--warmup", "1")
    seg_dir, ring_dir = tmp_path / "seg", tmp_path / "ring"
    done = _cli("collectives", *common, "--algorithm", "segmented_ring", "--segment-bytes",
                "1024", "--out", str(seg_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    (seg_path,) = seg_dir.glob("*.h5")
    t = ctrace.read(seg_path)
    phases = {int(k): v for k, v in json.loads(str(t.attrs["segment_phases"])).items()}
    ran = {int(k): v for k, v in json.loads(str(t.attrs["algorithm_ran"])).items()}
    sizes = [int(m) for m in t.message_bytes]
    assert set(phases) == {m for m in sizes if ran[m] == "segmented_ring"}
    assert set(phases.values()) >= {1, 2, 3, 4}  # the probe below can tell them apart
    assert phases[2048] == 1  # m = P x segment
    assert phases[3444] == 2  # bytes: the extra phase for a remainder above half
    shown = _cli("show", str(seg_path))
    assert shown.returncode == 0, shown.stderr
    assert any(line.split()[:2] == ["segment_phases", '{"2048":'] for line in
               shown.stdout.splitlines()), shown.stdout

    numbers = {v: k for k, v in ompi_catalogue("allreduce").items()}
    script = tmp_path / "phases.py"
    script.write_text(PHASE_PROBE)
    env = solver_env(OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                     OMPI_MCA_coll_tuned_allreduce_algorithm=str(numbers["segmented_ring"]),
                     OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize="1024")
    probe = subprocess.run(["mpiexec", "--oversubscribe", "-n", "2", sys.executable,
                            str(script), *map(str, sizes)], env=env, capture_output=True,
                           text=True, timeout=120, check=False)
    assert probe.returncode == 0, probe.stderr[-2000:]
    seen = {int(m): (int(n), int(big)) for m, n, big in
            (line.split() for line in probe.stdout.splitlines() if line)}
    for m in sizes:
        count, n = m // (8 if m % 8 == 0 else 1), phases.get(m, 1)
        calls, biggest = seen[m]
        assert calls == n, m  # the plain ring: one piece, its block
        # rank 0 reduces block 1 (count / 2, rounded down where uneven) in n pieces
        assert biggest == -(-(count // 2) // n), m

    done = _cli("collectives", *common, "--algorithm", "ring", "--out", str(ring_dir))
    assert done.returncode == 0, done.stderr[-2000:]
    (ring_path,) = ring_dir.glob("*.h5")
    one = "segmented_ring/seg1024 (1 phase: ran as the plain ring)"
    one_phase = sorted(m for m, n in phases.items() if n == 1)
    assert one_phase == [2048, 2435, 2896]  # 256 float64 = 2 x 128; 2435 B; 362 float64
    report = tmp_path / "report"
    done = _cli("analyze", str(seg_path), str(ring_path), "--out", str(report))
    assert done.returncode == 0, done.stderr[-2000:]
    best = (report / "collectives_best.csv").read_text()
    curves = (report / "collectives_curves.csv").read_text()
    page = (report / "collectives.html").read_text()
    labelled = {int(line.split(",")[2]) for line in best.splitlines() if one in line}
    assert labelled == set(one_phase)  # winner or runner-up: one of the two labels, P = 2
    assert ("allreduce at P = 2: the forced segmented_ring/seg1024 ran in 1 phase at "
            "2048-2896 B") in page
    assert ",segmented_ring/seg1024,2,per call (barriers),1," in curves

    old = tmp_path / "old" / seg_path.name
    old.parent.mkdir()
    shutil.copy(seg_path, old)
    with h5py.File(old, "r+") as f:
        del f["run"].attrs["segment_phases"]
    report = tmp_path / "old-report"
    done = _cli("analyze", str(old), str(ring_path), "--out", str(report))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(1 phase" not in (report / "collectives_best.csv").read_text()
    assert "segmented_ring/seg1024 at 2048-8192 B: phases not recorded" in (
        report / "collectives.html").read_text()
