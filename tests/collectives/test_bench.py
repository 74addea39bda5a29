"""The collectives driver under mpiexec -n 2 and -n 4: values, traces, forcing, failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.collectives.operations import OPERATIONS
from ksptrace.trace import collectives as ctrace
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi


def _mpiexec(n: int, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mpiexec", "--oversubscribe", "-n", str(n), sys.executable, *args],
                          env=solver_env(**env), capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksptrace", "collectives", *args],
                          env=solver_env(**env), capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)


@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_every_operation_checked_and_traced(tmp_path: Path, nprocs: int) -> None:
    proc = _mpiexec(nprocs, "tests/collectives/all_ops.py", str(tmp_path))
    assert proc.returncode == 0, proc.stderr  # a wrong value on any rank fails the job
    for op in OPERATIONS:
        if op == "plogp" and nprocs != 2:
            assert not (tmp_path / f"{op}.h5").exists()
            continue
        t = ctrace.read(tmp_path / f"{op}.h5")
        sizes = [0] if op == "barrier" else [1, 3, 8, 24, 1024]
        assert t.seconds.shape == (nprocs, len(sizes), 3)
        assert (t.parts is not None) == (op == "plogp")
        assert list(t.message_bytes) == sizes
        assert (t.seconds > 0).all()
        assert (t.seconds < 5).all()
        assert t.attrs["operation"] == op
        assert t.attrs["values_checked"] is True
        assert t.attrs["nprocs"] == nprocs
        assert len(set(t.hostnames)) == 1
        assert t.attrs["oversubscribed"] == (nprocs > (os.cpu_count() or 1))
        assert t.attrs["mpi_library"].startswith("Open MPI")
        overlap = op == "iallreduce_overlap"
        assert (t.comm_seconds is not None) == overlap
        if overlap:
            assert t.compute_seconds is not None
            assert int(t.attrs["compute_units"]) > 0
            # the overlapped call contains the compute: it cannot be much shorter
            assert np.median(t.seconds) > 0.5 * np.median(t.compute_seconds)


def test_forced_algorithm_is_in_the_trace(tmp_path: Path) -> None:
    proc = _cli("--np", "2", "--algorithm", "segmented_ring", "--segment-bytes", "4096",
                "--max-bytes", "64K", "--min-bytes", "16K", "--repetitions", "2",
                "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (path,) = tmp_path.glob("*.h5")
    assert "a5-segmented_ring_seg4096_P2" in path.name
    t = ctrace.read(path)
    assert (t.attrs["algorithm"], t.attrs["algorithm_name"]) == (5, "segmented_ring")
    assert t.attrs["algorithm_forced"] is True
    assert t.attrs["segment_bytes"] == 4096
    held = json.loads(str(t.attrs["algorithm_held"]))  # read back from Open MPI (MPI_T)
    assert held == {"coll_tuned_use_dynamic_rules": 1, "coll_tuned_allreduce_algorithm": 5,
                    "coll_tuned_allreduce_algorithm_segmentsize": 4096}
    ran = json.loads(str(t.attrs["algorithm_ran"]))  # 512 elements a segment, >= 2 x 512 each
    assert ran == {str(int(m)): "segmented_ring" for m in t.message_bytes}
    seen = json.loads(str(t.attrs["algorithm_env"]))  # as the rank's environment had it
    assert seen == {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                    "OMPI_MCA_coll_tuned_allreduce_algorithm": "5",
                    "OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize": "4096"}
    assert t.attrs["launcher"] == "mpiexec (openmpi)"
    assert list(t.message_bytes) == [16384, 32768, 65536]


def test_wrong_values_fail_on_every_rank(tmp_path: Path) -> None:
    proc = _cli("--np", "2", "--max-bytes", "64", "--out", str(tmp_path),
                KSPTRACE_FAULT="wrong-result-on-rank-1")
    assert proc.returncode == 9
    assert proc.stderr.strip() == ("ksptrace: error: allreduce (default) at 1 B on rank 1: "
                                   "injected wrong result (KSPTRACE_FAULT)")
    assert not any(tmp_path.iterdir())


def test_a_rank_failure_aborts_the_job(tmp_path: Path) -> None:
    proc = _cli("--np", "2", "--max-bytes", "64", "--out", str(tmp_path),
                KSPTRACE_FAULT="raise-on-rank-1")
    assert proc.returncode != 0
    assert "injected fault on rank 1" in proc.stderr.splitlines()[0]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("args", "message"), [
    (["--algorithm", "42"], "unknown Open MPI allreduce algorithm '42'; valid: 0 ignore"),
    (["--op", "alltoall"], "--op is 'alltoall'; valid values: allreduce"),
    (["--algorithm", "ring", "--segment-bytes", "64"],
     "Open MPI allreduce algorithm ring takes no segment size"),
    (["--max-bytes", "64G"], "lower --max-bytes"),
    (["--op", "iallreduce", "--algorithm", "2"], "Open MPI cannot force an algorithm for"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    proc = _cli("--np", "2", "--out", str(tmp_path), *args)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert message in proc.stderr
    assert not any(tmp_path.iterdir())


def test_an_algorithm_the_library_rejects(tmp_path: Path) -> None:
    # past ksptrace's own check (the forcing handed to the ranks), Open MPI refuses the value
    # and would run its default: the run fails and keeps no trace
    forcing = ('{"library": "openmpi", "operation": "allreduce", "algorithm": 99, "name": '
               '"bogus", "segment_bytes": 0, "env": [["OMPI_MCA_coll_tuned_use_dynamic_rules", '
               '"1"], ["OMPI_MCA_coll_tuned_allreduce_algorithm", "99"]], "note": ""}')
    proc = _cli("--np", "2", "--max-bytes", "8", "--repetitions", "2", "--out", str(tmp_path),
                KSPTRACE_COLLECTIVE_FORCING=forcing)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "ksptrace: error: Open MPI holds coll_tuned_allreduce_algorithm = 0, not 99: it "
        "rejected the forced allreduce algorithm bogus; see ompi_info --param coll tuned "
        "--level 9")
    assert proc.stdout == ""
    assert not any(tmp_path.iterdir())


def test_under_an_external_mpiexec(tmp_path: Path) -> None:
    bad = _mpiexec(2, "-m", "ksptrace", "collectives", "--algorithm", "42", "--out",
                   str(tmp_path))
    assert bad.returncode == 2
    assert bad.stderr.count("ksptrace: error: unknown Open MPI allreduce algorithm") == 1
    good = _mpiexec(2, "-m", "ksptrace", "collectives", "--op", "bcast", "--algorithm",
                    "binomial", "--max-bytes", "16", "--repetitions", "2", "--out",
                    str(tmp_path))
    assert good.returncode == 0, good.stderr
    assert good.stdout.count("wrote") == 1  # rank 0 only
    (path,) = tmp_path.glob("*.h5")
    t = ctrace.read(path)
    assert t.attrs["launcher"] == "external"
    assert json.loads(str(t.attrs["algorithm_held"]))["coll_tuned_bcast_algorithm"] == 6


def test_overlap_achieved_is_printed(tmp_path: Path) -> None:
    proc = _cli("--np", "2", "--op", "iallreduce_overlap", "--min-bytes", "1K", "--max-bytes",
                "2K", "--compute-us", "50", "--test-calls", "4", "--repetitions", "2",
                "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].split() == ["bytes", "comm", "us", "compute", "us", "overlapped", "us",
                                "overlap"]
    assert [ln.split()[0] for ln in lines[2:]] == ["1024", "2048"]
    assert all(ln.endswith("%") for ln in lines[2:])


def test_forcing_for_another_library_is_refused(tmp_path: Path) -> None:
    forcing = ('{"library": "mpich", "operation": "allreduce", "algorithm": 8, "name": "ring", '
               '"segment_bytes": 0, "env": [["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "ring"]], '
               '"note": ""}')
    proc = _cli("--np", "2", "--max-bytes", "8", "--out", str(tmp_path),
                KSPTRACE_COLLECTIVE_FORCING=forcing)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("ksptrace: error: the algorithm was forced for mpich but "
                                   "the ranks run openmpi; pass the right --mpiexec")
