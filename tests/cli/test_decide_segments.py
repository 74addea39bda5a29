"""``ksptrace decide --method algorithm`` keeps the winning segment size (issue 54).

The issue's sweep: segmented ring with 1 KiB and 8 KiB segments, 16-64 KiB, P = 3 and 4. The
8 KiB runs are made to win (their times scaled down: which size wins on a loaded machine is not
the point) wherever they ran segmented; the rules file must then say ``5 ... 8192`` there, and
Open MPI, reading that file, must run 8 KiB segments, not the plain ring that segment size 0
gives: the pieces a user-defined sum is handed under the rules file are those of the segmented
ring forced with 8 KiB segments. ``--method algorithm_name`` accepts a default run, labelled by
what it ran."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.studies.decisions.rules import rule_with_segment
from ksptrace.trace import collectives as ctrace
from tests.conftest import solver_env

PIECES = """
import sys
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
for count in map(int, sys.argv[1:]):
    sizes = []
    def add(inbuf, outbuf, datatype, sizes=sizes):
        b = np.frombuffer(outbuf)
        b += np.frombuffer(inbuf)
        sizes.append(b.size)
    op = MPI.Op.Create(add, commute=True)
    y = np.empty(count)
    comm.Allreduce(np.ones(count), y, op=op)
    op.Free()
    if comm.Get_rank() == 0:
        print(count, max(sizes), len(sizes), flush=True)
"""


def _ksptrace(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "ksptrace", *args], env=solver_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.mark.mpi
def test_the_winning_segment_size_reaches_the_rules_and_open_mpi_runs_it(tmp_path: Path
                                                                        ) -> None:
    if shutil.which("mpiexec") is None or shutil.which("ompi_info") is None:
        pytest.skip("needs Open MPI's mpiexec and ompi_info")
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for nprocs in (3, 4):
        for seg in (1024, 8192):
            out = sweep / f"sr-{nprocs}-{seg}.h5"
            _ksptrace("collectives", "--np", str(nprocs), "--op", "allreduce", "--algorithm",
                      "segmented_ring", "--segment-bytes", str(seg), "--min-bytes", "16K",
                      "--max-bytes", "64K", "--repetitions", "2", "--warmup", "0",
                      "--out", str(out))
            if seg == 8192:  # make it the winner wherever it ran segmented
                t = ctrace.read(out)
                ctrace.write(dataclasses.replace(t, seconds=t.seconds * 1e-3), out, True)
    _ksptrace("collectives", "--np", "4", "--op", "allreduce", "--min-bytes", "16K",
              "--max-bytes", "64K", "--repetitions", "2", "--warmup", "0",
              "--out", str(sweep / "default-4.h5"))
    segmented = sorted(sweep.glob("sr-*.h5"))
    _ksptrace("decide", *map(str, segmented), "--axes", "nprocs,bytes", "--method",
              "algorithm", "--ompi-rules", "allreduce", "--out", str(tmp_path / "d"), "--quiet")
    rules = next((tmp_path / "d").rglob("*.conf"))
    text = rules.read_text()
    # 8 KiB segments run segmented from 3 x 8 KiB (P = 3) and 4 x 8 KiB (P = 4) on
    assert rule_with_segment(text, 3, 32768) == (5, 8192)
    assert rule_with_segment(text, 3, 65536) == (5, 8192)
    assert rule_with_segment(text, 4, 65536) == (5, 8192)
    assert '"5\\057seg8192"' in (rules.parent / "decide.c").read_text()  # generated C
    script = tmp_path / "pieces.py"
    script.write_text(PIECES)

    def pieces(nprocs: int, **env: str) -> list[str]:
        done = subprocess.run(["mpiexec", "--oversubscribe", "-n", str(nprocs), sys.executable,
                               str(script), "8192"], env=solver_env(**env),
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    for nprocs in (3, 4):  # at 64 KiB, 8 KiB segments take 3 (P = 3) or 2 (P = 4) phases
        ruled = pieces(nprocs, OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                       OMPI_MCA_coll_tuned_dynamic_rules_filename=str(rules))
        forced = pieces(nprocs, OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                        OMPI_MCA_coll_tuned_allreduce_algorithm="5",
                        OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize="8192")
        assert ruled == forced, (nprocs, ruled, forced)
        assert int(ruled[1]) < -(-8192 // nprocs)  # smaller than the plain ring's blocks
    # algorithm_name accepts the default runs, labelled by what they ran
    _ksptrace("decide", str(sweep), "--axes", "nprocs,bytes", "--method", "algorithm_name",
              "--ompi-rules", "allreduce", "--out", str(tmp_path / "n"), "--quiet")
    table = next((tmp_path / "n").rglob("cells.csv")).read_text()
    assert "default" not in table
    assert "segmented_ring/seg8192" in table
