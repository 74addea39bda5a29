"""What a ``default`` run ran (issue 54): Open MPI's fixed allreduce decision, held as data in
``ksptrace.collectives.ompi_fixed``, against summation-order fingerprints under ``mpiexec -n 3``
and ``-n 4``. A default ``ksptrace collectives`` run records ``algorithm_ran`` per size; at
every size the unforced allreduce must print the fingerprint of the algorithm recorded there,
forced by name."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from ksptrace.collectives import ompi_fixed
from ksptrace.collectives.algorithms import ompi_catalogue
from tests.conftest import solver_env


@pytest.mark.parametrize(("nbytes", "nprocs", "ran"), [
    (8, 3, "recursive_doubling"),      # 8 B..4 KiB: recursive doubling
    (4, 3, "ring"),                    # below 8 B: ring (4 bytes >= 3 ranks)
    (1, 3, "recursive_doubling"),      # ring with 1 element < 3 ranks
    (4096, 3, "ring"),
    (8192, 3, "recursive_doubling"),
    (131072, 3, "ring"),               # segmented ring with segment size 0
    (262144, 3, "rabenseifner"),
    (8, 4, "recursive_doubling"),      # ring with 1 element < 4 ranks
    (4096, 4, "recursive_doubling"),
    (8192, 4, "rabenseifner"),
    (1 << 20, 64, "rabenseifner"),
    (64, 2048, "nonoverlapping"),
])
def test_the_fixed_decision(nbytes: int, nprocs: int, ran: str) -> None:
    assert ompi_fixed.default_allreduce_ran([nbytes], nprocs)[nbytes] == ran


def test_the_fixed_decision_applies_to_open_mpi_41_and_50_on_one_node() -> None:
    assert ompi_fixed.fixed_applies("Open MPI v4.1.4, package: Debian", 1) is None
    assert ompi_fixed.fixed_applies("Open MPI v5.0.3", 1) is None
    assert "han" in str(ompi_fixed.fixed_applies("Open MPI v5.0.3", 2))
    assert "4.0" in str(ompi_fixed.fixed_applies("Open MPI v4.0.7", 1))
    assert ompi_fixed.fixed_applies("MPICH Version: 4.0.2", 1) is not None


PROBE = """
import hashlib, sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
pieces = []
def add(inbuf, outbuf, datatype):  # a sum that also records the pieces it is handed
    b = np.frombuffer(outbuf)
    b += np.frombuffer(inbuf)
    pieces.append(b.size)
op = MPI.Op.Create(add, commute=True)
for count in map(int, sys.argv[2:]):
    digest = hashlib.sha1()
    for call in range(int(sys.argv[1])):
        rng = np.random.default_rng(100_003 * call + 7919 * r + count)
        x = rng.standard_normal(count) * 2.0 ** rng.integers(-30, 30, count)
        y = np.empty_like(x)
        pieces.clear()
        comm.Allreduce(x, y, op=op)
        digest.update(y.tobytes() + repr(pieces).encode())
    if r == 0:
        print(count, digest.hexdigest(), flush=True)
"""
"""Summation order and the piece sizes rank 0 reduces: the order alone does not tell
Rabenseifner from recursive doubling at P = 3, its halved pieces do."""


def _probe(tmp: Path, nprocs: int, counts: list[int], **env: str) -> dict[int, str]:
    script = tmp / "probe.py"
    script.write_text(PROBE)
    proc = subprocess.run(["mpiexec", "--oversubscribe", "-n", str(nprocs), sys.executable,
                           str(script), "3", *map(str, counts)], env=solver_env(**env),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {int(c): h for c, h in (line.split() for line in proc.stdout.splitlines() if line)}


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [3, 4])
def test_a_default_run_records_what_ran(tmp_path: Path, nprocs: int) -> None:
    if shutil.which("mpiexec") is None or shutil.which("ompi_info") is None:
        pytest.skip("needs Open MPI's mpiexec and ompi_info")
    out = tmp_path / "default.h5"
    proc = subprocess.run([sys.executable, "-m", "ksptrace", "collectives", "--np",
                           str(nprocs), "--op", "allreduce", "--min-bytes", "8",
                           "--max-bytes", "512K", "--repetitions", "1", "--warmup", "0",
                           "--out", str(out)], env=solver_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with h5py.File(out, "r") as f:
        ran = {int(k): v for k, v in json.loads(f["run"].attrs["algorithm_ran"]).items()}
    assert len(set(ran.values())) >= 2  # the default changes algorithm with the size
    counts = [m // 8 for m in ran]
    default = _probe(tmp_path, nprocs, counts)
    numbers = {v: k for k, v in ompi_catalogue("allreduce").items()}
    forced = {name: _probe(tmp_path, nprocs, counts,
                           OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                           OMPI_MCA_coll_tuned_allreduce_algorithm=str(numbers[name]))
              for name in sorted(set(ran.values()))}
    for m, name in ran.items():
        assert default[m // 8] == forced[name][m // 8], (m, name)
    # not vacuous: each recorded algorithm is told from each other one at a size it was recorded
    for name in forced:
        for other in forced:
            assert name == other or any(forced[name][m // 8] != forced[other][m // 8]
                                        for m, n in ran.items() if n == name), (name, other)


def test_what_ran_says_when_it_cannot_tell() -> None:
    from ksptrace.collectives.algorithms import default_forcing
    from ksptrace.collectives.bench import BenchSettings, what_ran

    def settings(library: str) -> BenchSettings:
        return BenchSettings("allreduce", (8, 65536), 1, 0, default_forcing(library,
                                                                           "allreduce"),
                             Path("unused.h5"))

    ompi = "Open MPI v4.1.4, package: Debian OpenMPI"
    held = {"coll_tuned_use_dynamic_rules": 0}
    assert what_ran(settings("openmpi"), 3, held, ompi) == (
        {8: "recursive_doubling", 65536: "ring"}, "")
    ran, why = what_ran(settings("openmpi"), 3, {"coll_tuned_use_dynamic_rules": 1}, ompi)
    assert ran is None
    assert "dynamic rules" in why
    ran, why = what_ran(settings("openmpi"), 3, held, "Open MPI v5.0.3", n_nodes=2)
    assert ran is None
    assert "han" in why
    ran, why = what_ran(settings("mpich"), 3, {}, "MPICH Version: 4.0.2")
    assert ran is None
    assert "MPICH" in why
    assert what_ran(settings("openmpi"), 1, held, ompi) == (None, "")  # one rank: no algorithm
