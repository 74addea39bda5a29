"""MPICH for real (issue 32): its algorithm list read from the library, forcing through its
CVARs read back through MPI_T, and its documented fallback checked by a fingerprint under
``mpiexec.mpich -n 3`` and ``-n 4``.

These run on the MPICH stack that ``scripts/bootstrap.sh --mpich`` builds (Debian's mpich and a
venv whose mpi4py is compiled against it); where it is missing they skip and say how to build it.
MPICH's allreduce algorithms add in the same order at P = 3 and 4 (every one pairs neighbours
first), so sums cannot tell them apart. The probe therefore reduces NaNs whose payloads name the
rank they came from: an addition of two NaNs returns one operand's payload, so the payloads each
rank ends with record which operands each algorithm put first, and where.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
from pathlib import Path

import h5py
import pytest

from ksptrace.collectives import algorithms as alg
from ksptrace.collectives import fallbacks
from ksptrace.collectives.mpich import parse_names
from ksptrace.errors import UsageError
from tests.conftest import ROOT, solver_env

GLUED = ("Variable to select allreduce algorithmauto - Internal algorithm selection (can be "
         "overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)nb                       - "
         "Force nonblocking algorithmsmp                      - Force smp algorithmrecursive_"
         "doubling       - Force recursive doubling algorithmreduce_scatter_allgather - Force "
         "reduce scatter allgather algorithm")
"""MPICH 4.0.2's description of MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM as MPI_T returns it."""


def test_names_are_recovered_from_the_glued_description() -> None:
    known = alg.MPICH_ALGORITHMS["allreduce"]
    assert parse_names(GLUED, known) == (
        "auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather")
    # a name ksptrace does not know ends the list rather than being guessed
    assert parse_names(GLUED.replace("smp   ", "newalgo   "), known) == ("auto", "nb")


def test_forcing_takes_the_installed_list_and_refuses_a_name_it_lacks() -> None:
    names = ("auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather")
    f = alg.forcing_for("mpich", "allreduce", "reduce_scatter_allgather", mpich_names=names)
    assert f.algorithm == 4
    assert dict(f.env)["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "reduce_scatter_allgather"
    with pytest.raises(UsageError, match=r"unknown MPICH allreduce algorithm 'ring'.*mpivars"):
        alg.forcing_for("mpich", "allreduce", "ring", mpich_names=names)
    assert not alg.forcing_for("mpich", "allreduce", "default", mpich_names=names).forced


@pytest.mark.parametrize(("count", "nprocs", "ran"), [
    (1, 3, "recursive_doubling"),    # count < pof2 = 2
    (2, 3, "reduce_scatter_allgather"),
    (3, 4, "recursive_doubling"),    # count < pof2 = 4
    (4, 4, "reduce_scatter_allgather"),
    (1, 1, "reduce_scatter_allgather"),
])
def test_mpichs_rule(count: int, nprocs: int, ran: str) -> None:
    assert fallbacks.algorithm_ran("mpich", "allreduce", "reduce_scatter_allgather", count,
                                   nprocs, 8) == ran
    assert fallbacks.algorithm_ran("mpich", "allreduce", "smp", 1, nprocs, 8) == "smp"


def mpich_python() -> str:
    given = os.environ.get("KSPTRACE_MPICH_PYTHON")
    found = [given] if given else sorted(glob.glob(os.path.expanduser(
        "~/.cache/ksptrace/mpich-*/venv/bin/python")))
    usable = [p for p in found if p and os.access(p, os.X_OK)
              and glob.glob(os.path.join(os.path.dirname(os.path.dirname(p)), "..", ".done-*"))]
    if not usable or not os.access("/usr/bin/mpiexec.mpich", os.X_OK):
        pytest.skip("needs the MPICH stack: scripts/bootstrap.sh --mpich (make stack-mpich)")
    return usable[-1]


PROBE = """
import sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
for count in map(int, sys.argv[1:]):
    bits = np.uint64(0x7FF8000000000000) | (np.uint64(r + 1) << np.uint64(20))
    x = (bits | np.arange(count, dtype=np.uint64)).view(np.float64)
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    payload = (y.view(np.uint64) >> np.uint64(20)) & np.uint64(0xFF)
    every = comm.gather(payload.tolist(), root=0)
    if r == 0:
        print(count, every, flush=True)
"""


def _env(python: str, **extra: str) -> dict[str, str]:
    env = solver_env(PYTHONPATH=str(ROOT), **extra)
    env.pop("OMPI_MCA_rmaps_base_oversubscribe", None)
    return env


def _fingerprints(tmp: Path, python: str, nprocs: int, name: str | None,
                  counts: tuple[int, ...]) -> dict[int, str]:
    """Each count's payloads on every rank, ``name`` forced (None: MPICH's default)."""
    script = tmp / "probe.py"
    script.write_text(PROBE)
    env = _env(python) if name is None else _env(
        python, MPIR_CVAR_DEVICE_COLLECTIVES="none", MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=name)
    proc = subprocess.run(["mpiexec.mpich", "-n", str(nprocs), python, str(script),
                           *map(str, counts)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line)  # type: ignore[misc]


@pytest.mark.mpi
@pytest.mark.parametrize(("nprocs", "small", "large"), [(3, 1, 2), (4, 3, 4)])
def test_the_fingerprints_agree_with_mpichs_rule(tmp_path: Path, nprocs: int, small: int,
                                                 large: int) -> None:
    """Below pof2, forced reduce_scatter_allgather leaves every rank with the payloads forced
    recursive doubling leaves; at pof2 it leaves its own (and smp differs from both)."""
    python = mpich_python()
    name = "reduce_scatter_allgather"
    assert fallbacks.mpich_allreduce(name, small, nprocs) == "recursive_doubling"
    assert fallbacks.mpich_allreduce(name, large, nprocs) == name
    forced = _fingerprints(tmp_path, python, nprocs, name, (small, large))
    doubling = _fingerprints(tmp_path, python, nprocs, "recursive_doubling", (small, large))
    smp = _fingerprints(tmp_path, python, nprocs, "smp", (small, large))
    assert forced[str(small)] == doubling[str(small)]  # type: ignore[index]
    assert forced[str(large)] != doubling[str(large)]  # type: ignore[index]
    assert smp[str(large)] not in (forced[str(large)], doubling[str(large)])  # type: ignore[index]


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_ksptrace_collectives_forces_mpich_and_reads_it_back(tmp_path: Path, nprocs: int) -> None:
    python = mpich_python()
    out = tmp_path / "t.h5"
    cmd = [python, "-m", "ksptrace", "collectives", "--np", str(nprocs), "--mpiexec",
           "mpiexec.mpich", "--op", "allreduce", "--algorithm", "reduce_scatter_allgather",
           "--min-bytes", "8", "--max-bytes", "32", "--repetitions", "2", "--out", str(out)]
    proc = subprocess.run(cmd, env=_env(python), capture_output=True, text=True, timeout=180,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with h5py.File(out, "r") as f:
        run = f["run"].attrs
        assert "MPICH" in f["provenance"].attrs["mpi_library"]
        assert run["algorithm_name"] == "reduce_scatter_allgather"
        held = json.loads(run["algorithm_held"])
        assert held["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == run["algorithm"] == 4
        ran = json.loads(run["algorithm_ran"])
    expected = "recursive_doubling" if nprocs == 2 else "reduce_scatter_allgather"
    assert ran["8"] == expected  # one float64 < pof2 = 2 ranks
    assert ran["16"] == "reduce_scatter_allgather"


def test_an_algorithm_this_mpich_lacks_is_one_line(tmp_path: Path) -> None:
    python = mpich_python()
    proc = subprocess.run([python, "-m", "ksptrace", "collectives", "--np", "2", "--mpiexec",
                           "mpiexec.mpich", "--op", "allreduce", "--algorithm", "no_such",
                           "--out", str(tmp_path)], env=_env(python), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
    assert "unknown MPICH allreduce algorithm 'no_such'" in proc.stderr
    assert not list(tmp_path.iterdir())
