"""Which algorithm ran (issue 32): Open MPI's fallbacks inside a forced allreduce algorithm, as
``ksptrace.collectives.fallbacks`` derives them, against summation-order fingerprints under
``mpiexec -n 3`` and ``-n 4``: crafted values whose rounded sums reveal the order in which an
algorithm added them, so two settings that print the same fingerprint ran the same code."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.collectives import fallbacks
from ksptrace.collectives.algorithms import ompi_catalogue
from tests.conftest import solver_env


@pytest.mark.parametrize(("name", "count", "nprocs", "seg", "ran"), [
    ("ring", 2, 3, 0, "recursive_doubling"),     # count < size
    ("ring", 3, 3, 0, "ring"),
    ("segmented_ring", 4096, 4, 0, "ring"),      # no segment size: one segment of everything
    ("segmented_ring", 4096, 4, 4096, "segmented_ring"),  # 512 per segment, 4096 >= 4 * 512
    ("segmented_ring", 1000, 4, 4096, "ring"),   # 1000 < 4 * 512
    ("segmented_ring", 2, 3, 0, "recursive_doubling"),    # ring, then ring's own rule
    ("segmented_ring", 381, 3, 1021, "ring"),    # 1021 B: 127 elements + 5 B > half: 128
    ("segmented_ring", 381, 3, 1020, "segmented_ring"),   # 1020 B: 127 (4 B is not > half)
    ("rabenseifner", 3, 4, 0, "basic_linear"),   # count < pof2 = 4
    ("rabenseifner", 4, 4, 0, "rabenseifner"),
    ("rabenseifner", 1, 3, 0, "basic_linear"),   # pof2 of 3 is 2
    ("rabenseifner", 2, 3, 0, "rabenseifner"),
    ("recursive_doubling", 1, 3, 0, "recursive_doubling"),
    ("ring", 1, 1, 0, "ring"),                   # one rank: nothing to fall back from
])
def test_the_rules(name: str, count: int, nprocs: int, seg: int, ran: str) -> None:
    assert fallbacks.openmpi_allreduce(name, count, nprocs, 8, seg) == ran


def test_only_open_mpis_allreduce_has_rules_and_sizes_map_to_counts() -> None:
    assert fallbacks.algorithm_ran("mpich", "allreduce", "ring", 1, 4, 8) == "ring"
    assert fallbacks.algorithm_ran("openmpi", "bcast", "chain", 1, 4, 1) == "chain"
    # 16 B of float64 is 2 elements (< 3 ranks); 17 B are bytes: 17 elements
    assert fallbacks.ran_per_size("openmpi", "allreduce", "ring", [16, 17, 64], 3) == {
        16: "recursive_doubling", 17: "ring", 64: "ring"}


PROBE = """
import hashlib, sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
calls = int(sys.argv[1])
for count in map(int, sys.argv[2:]):
    digest = hashlib.sha1()
    for call in range(calls):
        rng = np.random.default_rng(100_003 * call + 7919 * r + count)
        x = rng.standard_normal(count) * 2.0 ** rng.integers(-30, 30, count)
        y = np.empty_like(x)
        comm.Allreduce(x, y, op=MPI.SUM)
        digest.update(y.tobytes())
    if r == 0:
        print(count, digest.hexdigest(), flush=True)
"""


def _fingerprints(tmp: Path, nprocs: int, counts: tuple[int, ...], number: int,
                  seg: int = 0) -> dict[int, str]:
    """count -> the hash of 40 allreduces of that many crafted float64 values."""
    script = tmp / "probe.py"
    script.write_text(PROBE)
    env = solver_env(OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                     OMPI_MCA_coll_tuned_allreduce_algorithm=str(number))
    if seg:
        env["OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize"] = str(seg)
    proc = subprocess.run(["mpiexec", "--oversubscribe", "-n", str(nprocs), sys.executable,
                           str(script), "40", *map(str, counts)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {int(c): h for c, h in (line.split() for line in proc.stdout.splitlines() if line)}


@pytest.mark.mpi
@pytest.mark.parametrize(("nprocs", "name", "small", "large"), [
    (3, "ring", 2, 6),             # count < size: recursive doubling
    (4, "ring", 3, 8),
    (4, "rabenseifner", 3, 8),     # count < pof2: basic linear
    (3, "rabenseifner", 1, 6),
])
def test_the_fingerprints_agree_with_the_rules(tmp_path: Path, nprocs: int, name: str,
                                               small: int, large: int) -> None:
    """Below the rule's threshold the forced algorithm prints the fingerprint of the one the
    rule names; above it, its own (so the probe tells the two apart)."""
    if shutil.which("mpiexec") is None or shutil.which("ompi_info") is None:
        pytest.skip("needs Open MPI's mpiexec and ompi_info")
    pytest.importorskip("mpi4py")
    numbers = {v: k for k, v in ompi_catalogue("allreduce").items()}
    other = fallbacks.openmpi_allreduce(name, small, nprocs, 8)  # what runs below the threshold
    assert other != name
    assert fallbacks.openmpi_allreduce(name, large, nprocs, 8) == name
    forced = _fingerprints(tmp_path, nprocs, (small, large), numbers[name])
    fallback = _fingerprints(tmp_path, nprocs, (small, large), numbers[other])
    assert forced[small] == fallback[small]  # the same code ran under two names
    assert forced[large] != fallback[large]  # the probe tells the two algorithms apart


PIECE_PROBE = """
import sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
for count in map(int, sys.argv[1:]):
    sizes = []
    def add(inbuf, outbuf, datatype, sizes=sizes):  # called once per piece it reduces
        b = np.frombuffer(outbuf)
        b += np.frombuffer(inbuf)
        sizes.append(b.size)
    op = MPI.Op.Create(add, commute=True)
    y = np.empty(count)
    comm.Allreduce(np.ones(count), y, op=op)
    op.Free()
    assert y[0] == comm.Get_size()
    if comm.Get_rank() == 0:
        print(count, max(sizes), flush=True)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [3, 4])
def test_segmented_ring_runs_as_plain_ring_below_p_segments(tmp_path: Path, nprocs: int) -> None:
    """The segmented-ring rules by the piece sizes a user-defined sum is handed (a sum's order
    does not tell segmented from plain ring): with 1 KiB segments (128 float64) it reduces
    pieces of 128 once the message holds P segments, and the plain ring's blocks of count / P
    below that and without a segment size."""
    if shutil.which("mpiexec") is None or shutil.which("ompi_info") is None:
        pytest.skip("needs Open MPI's mpiexec and ompi_info")
    numbers = {v: k for k, v in ompi_catalogue("allreduce").items()}
    below, above = 128 * nprocs - 8, 128 * nprocs * 8
    assert fallbacks.openmpi_allreduce("segmented_ring", below, nprocs, 8, 1024) == "ring"
    assert fallbacks.openmpi_allreduce("segmented_ring", above, nprocs, 8, 1024) == (
        "segmented_ring")
    assert fallbacks.openmpi_allreduce("segmented_ring", above, nprocs, 8, 0) == "ring"
    script = tmp_path / "pieces.py"
    script.write_text(PIECE_PROBE)
    biggest = {}
    for seg in (1024, 0):
        env = solver_env(OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                         OMPI_MCA_coll_tuned_allreduce_algorithm=str(numbers["segmented_ring"]),
                         OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize=str(seg))
        proc = subprocess.run(["mpiexec", "--oversubscribe", "-n", str(nprocs), sys.executable,
                               str(script), str(below), str(above)], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        biggest[seg] = dict(line.split() for line in proc.stdout.splitlines() if line)
    ring_block = -(-above // nprocs)
    assert biggest[1024][str(above)] == "128"  # segments: the segmented ring ran
    assert int(biggest[0][str(above)]) == ring_block  # no segment size: the plain ring
    # < P segments: the plain ring's blocks (count / P, rounded either way where it is uneven)
    assert int(biggest[1024][str(below)]) in (below // nprocs, -(-below // nprocs))
