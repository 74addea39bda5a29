"""``ksptrace reductions`` on a solver trace, a collectives trace and a -log_view file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.studies.collectives.synthetic import allreduce_traces
from ksptrace.trace import collectives as ctrace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

DATA = Path(__file__).parents[1] / "data" / "collectives"


def test_reductions_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    solver = write_trace(synthetic_trace(nprocs=2, iterations=100, ranks_per_node=2, seed=3),
                         tmp_path / "s.h5")
    (c,) = allreduce_traces(nprocs=(2,), algorithms=("recursive_doubling",), sizes=(8, 64))
    coll = ctrace.write(c, tmp_path / "c.h5")
    log = str(DATA / "log_view_gmres_P2_K100.txt")
    assert main(["reductions", str(solver), str(coll), "--log-view", log]) == 0
    out = capsys.readouterr()
    assert "2.10 reductions per iteration" in out.out
    assert "different hosts" in out.err  # synthetic host names differ
    (c4,) = allreduce_traces(nprocs=(4,), algorithms=("ring",), sizes=(8, 64))
    coll4 = ctrace.write(c4, tmp_path / "c4.h5")
    assert main(["reductions", str(solver), str(coll4), "--log-view", log]) == 2
    assert "measure the allreduce at the same P" in capsys.readouterr().err
    assert main(["reductions", str(solver), str(coll), "--log-view", log, "--bytes", "4"]) == 2


def test_exposed_time_of_an_overlapped_reduction(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    solver = write_trace(synthetic_trace(nprocs=2, iterations=100, ranks_per_node=2, seed=3),
                         tmp_path / "s.h5")
    shape = (2, 1, 50)
    rng = np.random.default_rng(0)
    work = rng.uniform(90e-6, 110e-6, shape)
    overlapped = ctrace.CollectiveTrace(
        seconds=work + 3e-6, message_bytes=np.array([8]), node_ids=np.zeros(2),
        hostnames=("h", "h"), attrs={"operation": "iallreduce_overlap",
                                     "compute_seconds_target": 1e-4},
        comm_seconds=np.full(shape, 10e-6), compute_seconds=work)
    coll = ctrace.write(overlapped, tmp_path / "o.h5")
    log = str(DATA / "log_view_gmres_P2_K100.txt")
    assert main(["reductions", str(solver), str(coll), "--log-view", log]) == 0
    out = capsys.readouterr().out
    assert "exposed time" in out
    assert "x 3.00 us" in out  # 3 us exposed of the 10 us reduction


@pytest.mark.mpi
def test_runs_count_their_reductions_and_analyze_reports_the_shares(
        ksptrace_cli, tmp_path: Path) -> None:
    """``ksptrace run`` keeps PETSc's count of the timed solve's reductions (CG: 3 blocking per
    iteration; pipelined CG: 1 split-phase, which -log_view's Reduct column misses), so that
    ``reductions`` needs no -log_view and ``analyze`` puts the shares beside the allreduce."""
    from ksptrace.trace.io import read_trace

    k = 50
    for ksp in ("cg", "pipecg"):
        proc = ksptrace_cli("run", "--n", "4000", "--ksp", ksp, "--iterations", str(k),
                            "--np", "2", "--warmup", "--out", str(tmp_path / f"{ksp}.h5"))
        assert proc.returncode == 0, proc.stderr
    proc = ksptrace_cli("collectives", "--op", "allreduce", "--min-bytes", "8", "--max-bytes",
                        "8", "--repetitions", "50", "--np", "2", "--out",
                        str(tmp_path / "ar.h5"))
    assert proc.returncode == 0, proc.stderr
    cg, pipecg = read_trace(tmp_path / "cg.h5").attrs, read_trace(tmp_path / "pipecg.h5").attrs
    assert cg["ksp_solves"] == 1
    assert pipecg["ksp_solves"] == 1
    assert 3 * k <= int(cg["reductions_blocking"]) <= 3 * k + 3  # type: ignore[call-overload]
    assert cg["reductions_split"] == 0
    assert pipecg["petsc_iterations"] == k + 1
    assert int(pipecg["reductions_split"]) in (k + 1, k + 2)  # type: ignore[call-overload]
    assert int(pipecg["reductions_blocking"]) <= 2  # type: ignore[call-overload]

    proc = ksptrace_cli("reductions", str(tmp_path / "cg.h5"), str(tmp_path / "ar.h5"))
    assert proc.returncode == 0, proc.stderr
    assert "counted during the run" in proc.stdout
    assert "cg P=2: 3.0" in proc.stdout

    proc = ksptrace_cli("analyze", str(tmp_path / "cg.h5"), str(tmp_path / "pipecg.h5"),
                        str(tmp_path / "ar.h5"), "--out", str(tmp_path / "rep"),
                        "--no-figures", "--quiet", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    page = tmp_path / "rep" / "collectives"
    table = (page / "collectives_reductions.csv").read_text().splitlines()
    assert [row.split(",")[:3] for row in table[1:]] == [["cg.h5", "cg", "2"],
                                                        ["pipecg.h5", "pipecg", "2"]]
    assert "Reductions in the solves" in (page / "collectives.html").read_text()
    # Issue 30: the main page answers "how much of an iteration do the collectives explain?"
    main = (tmp_path / "rep" / "report.html").read_text()
    assert "How much of an iteration do the collectives explain?" in main
    assert re.search(r"CG at P = 2: 3(\.0\d*)? reductions per iteration of [\d.]+ [nµm]?s each "
                     r"explain [\d.]+ % of the mean iteration", main)
    assert "PIPECG at P = 2: " in main
    assert "each explain at most" in main  # pipelined: an upper bound
    answers = json.loads((tmp_path / "rep" / "summary.json").read_text())["answers"]
    assert answers[-1]["key"] == "collectives"
