"""``ksptrace.record`` in real petsc4py programs under ``mpiexec -n 1`` and ``-n 2``
(tests/harness/record_check.py): a 5-step loop, a SNES's and a TS's inner KSP, an exception
inside the block, and the bad calls."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.studies.collectives.reductions import count_from_attrs
from ksptrace.trace.read import read_trace
from ksptrace.trace.solves import split
from tests.conftest import ROOT, solver_env

pytestmark = [pytest.mark.mpi, pytest.mark.usefixtures("require_petsc")]
SCRIPT = Path(__file__).with_name("record_check.py")


@pytest.fixture(scope="module", params=[(1, "c"), (2, "c"), (2, "python")],
                ids=["P1", "P2", "P2-python-hooks"])
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[int, Path, dict[str, dict[str, object]]]:
    """Every case run by the C hooks (the C monitor) and by the Python ones."""
    nprocs, monitor = request.param
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found")
    out = tmp_path_factory.mktemp(f"record{nprocs}")
    proc = subprocess.run(
        [mpiexec, "-n", str(nprocs), sys.executable, str(SCRIPT), str(out)],
        env=solver_env(PYTHONPATH=str(ROOT), KSPTRACE_MONITOR=monitor), capture_output=True,
        text=True, timeout=300, check=False, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    attrs = read_trace(out / "loop.h5").attrs
    assert attrs["monitor"] == monitor
    # the C monitor's compiler is named (GCC's __VERSION__ here), the Python one has none
    assert (monitor == "c") == bool(attrs.get("monitor_compiler"))
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return nprocs, out, {str(r["case"]): r for r in rows}


def test_every_solve_of_a_loop_has_its_own_iteration_count(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    nprocs, out, rows = recorded
    its = rows["loop"]["its"]
    assert rows["loop"]["inside"] == 5
    assert rows["loop"]["after"] == 5  # still known once the hooks are freed
    assert isinstance(its, list)
    assert len(set(its)) >= 3  # the right-hand sides make the counts differ
    trace = read_trace(out / "loop.h5")
    assert trace.attrs["schema_version"] == 3
    assert trace.nprocs == nprocs
    assert trace.solves is not None
    assert trace.solves.count == 5
    assert trace.solves.iterations.tolist() == its
    assert trace.solves.petsc_iterations.tolist() == its
    assert set(trace.solves.reasons) <= {"CONVERGED_RTOL", "CONVERGED_ATOL"}
    assert trace.iterations == sum(its)
    assert trace.attrs["solves"] == 5
    assert trace.attrs["recorded"] is True
    assert trace.attrs["ksp"] == "cg"
    # PETSc's count of the block's reductions: CG has 3 per iteration, plus each solve's start;
    # on one rank there is nothing to reduce (PETSc calls no MPI_Allreduce)
    counted = count_from_attrs(trace.attrs)
    assert (counted.calls, counted.iterations) == (5, sum(its))
    if nprocs == 1:
        assert counted.blocking == 0
    else:
        assert 3 * sum(its) <= counted.blocking <= 3 * sum(its) + 5 * 4
    # each solve's KSPSolve time (PETSc's event log) holds its stamped iterations, and no
    # more than the time between the previous solve's last stamp and the next one's first
    # (a bound from the trace itself: no wall-clock margin a loaded machine could exceed)
    solves = split(trace)
    for s, one in enumerate(solves):
        assert one.attrs["solve"] == s
        assert one.iterations == its[s]
        span = one.stamps[:, -1] - one.stamps[:, 0]
        assert (one.solve_seconds >= span).all()
        if 0 < s < len(solves) - 1:
            room = solves[s + 1].stamps[:, 0] - solves[s - 1].stamps[:, -1]
            assert (one.solve_seconds < room).all()
    assert (np.diff(trace.stamps, axis=1) > 0).all()  # one clock, solve after solve


def test_an_exception_inside_the_block_leaves_no_trace(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    nprocs, out, rows = recorded
    assert rows["raised"]["error"] == "boom"
    assert rows["raised"]["monitors"] == 0  # the monitor is detached
    assert not (out / "raised.h5").exists()
    assert not (out / "one.h5").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file
    if nprocs == 2:  # rank 0 raised nothing itself: it says why no trace came
        assert rows["one-rank"]["error"] == (
            "SolverError: another rank raised an exception inside the ksptrace.record block; "
            f"no trace written to {out / 'one.h5'}")


def test_one_ksp_recorded_in_many_blocks_keeps_the_programs_monitor(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    _, out, rows = recorded
    row = rows["blocks"]
    monitor = read_trace(out / "loop.h5").attrs["monitor"]
    assert row["solves"] == [1] * 7
    assert row["impls"] == [monitor] * 7  # the C monitor is reused from block to block
    its = int(row["its"])  # type: ignore[call-overload]
    assert row["own_calls"] == 8 * (its + 1)  # the program's monitor saw every solve
    for block in range(7):
        trace = read_trace(out / f"block{block}.h5")
        assert trace.attrs["monitor"] == monitor
        assert trace.iterations == its


def test_record_without_comm_on_two_ranks_is_one_error(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    nprocs, out, rows = recorded
    if nprocs == 1:
        assert rows["no-comm"]["error"] is None
        assert read_trace(out / "nocomm.h5").solves is not None
    else:
        assert rows["no-comm"]["error"] == (
            "UsageError: ksptrace.record on 2 ranks needs comm=: pass the communicator the KSP "
            "lives on, e.g. ksptrace.record(ksp, path, comm=MPI.COMM_WORLD)")
        assert not (out / "nocomm.h5").exists()


def test_the_ksp_inside_a_snes_is_recorded_at_every_newton_step(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    _, out, rows = recorded
    newton = rows["snes"]
    assert int(newton["reason"]) > 0  # type: ignore[call-overload]
    trace = read_trace(out / "snes.h5")
    assert trace.solves is not None
    assert trace.solves.count == newton["newton"]
    assert int(trace.solves.petsc_iterations.sum()) == newton["linear"]
    assert len(set(trace.solves.iterations.tolist())) > 1


def test_the_ksp_inside_a_ts_is_recorded_at_every_step(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    _, out, rows = recorded
    trace = read_trace(out / "ts.h5")
    assert trace.solves is not None
    assert trace.solves.count == rows["ts"]["steps"] == 4
    assert int(trace.solves.petsc_iterations.sum()) == rows["ts"]["linear"]


@pytest.mark.parametrize("pool", [False, True], ids=["each", "pooled"])
def test_ksptrace_analyze_reports_on_recorded_traces(
    recorded: tuple[int, Path, dict[str, dict[str, object]]], tmp_path: Path, pool: bool
) -> None:
    from ksptrace.cli.main import main

    nprocs, out, _ = recorded
    loop = read_trace(out / "loop.h5")
    assert loop.solves is not None
    traces = [str(out / "loop.h5")] if pool else [str(out / "loop.h5"), str(out / "snes.h5")]
    args = ["analyze", *traces, "--out", str(tmp_path / "r"),
            "--no-figures", "--no-cache", "--quiet", "--mc-runs", "2", "--candidates", "norm"]
    assert main([*args, "--pool-solves"] if pool else args) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    names = [Path(t["trace"]).name for t in summary["traces"]]
    rows = [t for t in summary["traces"] if Path(t["trace"]).name.startswith("loop.h5#")]
    lengths = loop.solves.iterations.tolist()
    if pool:  # one configuration per length, the solves of that length one after the other
        expected = {f"loop.h5#solve=K={k} x {lengths.count(k)}": k * lengths.count(k)
                    for k in set(lengths)}
    else:  # each solve a configuration, predicted from its own iteration count
        expected = {f"loop.h5#solve={s}": k for s, k in enumerate(lengths)}
    assert {Path(t["trace"]).name: t["iterations"] for t in rows} == expected
    for t in rows:
        assert t["nprocs"] == nprocs
        assert t["kspsolve"] > 0
        assert t["iterations_kept"] == t["iterations"]
    if not pool:  # every Newton step's linear solve
        snes = read_trace(out / "snes.h5")
        assert snes.solves is not None
        assert len([n for n in names if n.startswith("snes.h5#")]) == snes.solves.count


def test_many_solves_outgrow_the_first_buffer_and_stay_apart(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    nprocs, out, rows = recorded
    assert rows["many"]["inside"] == 400
    trace = read_trace(out / "many.h5")
    assert trace.solves is not None
    assert trace.solves.count == 400
    assert trace.solves.iterations.tolist() == [20] * 400
    assert trace.stamps.shape == (nprocs, 400 * 21)
    assert (np.diff(trace.stamps, axis=1) > 0).all()  # every slot written, solve after solve


def test_a_solve_stopped_by_an_exception_leaves_no_stamps_in_the_next(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    nprocs, out, rows = recorded
    assert "stop at 30" in str(rows["aborted"]["error"])
    assert rows["aborted"]["inside"] == 1  # the stopped solve never ended
    trace = read_trace(out / "aborted.h5")
    assert trace.solves is not None
    assert trace.solves.iterations.tolist() == [10]
    assert trace.stamps.shape == (nprocs, 11)


CANCELLED = """
import sys
from petsc4py import PETSc
from mpi4py import MPI
import ksptrace
from ksptrace.errors import KsptraceError
from ksptrace.problems import registry
inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, 100, {})
inst.prepare()
try:
    with ksptrace.record(inst.ksp, sys.argv[1], comm=MPI.COMM_WORLD):
        inst.solve()
        inst.ksp.monitorCancel()  # the program takes every monitor off: nothing is stamped
        inst.reset()
        inst.solve()
except KsptraceError as exc:
    print(exc)
"""


def test_a_monitor_cancelled_inside_the_block_is_named(tmp_path: Path) -> None:
    """The C hooks stop the recording and name the cause after the block (no trace): the
    program took the monitor off (issue 50: the error blamed gmres, "needs a Krylov
    method"). The Python monitor is put back on the KSP before every solve: it records on."""
    path = tmp_path / "p.h5"
    monitor = "c"
    proc = subprocess.run([sys.executable, "-c", CANCELLED, str(path)],
                          env=solver_env(PYTHONPATH=str(ROOT), KSPTRACE_MONITOR=monitor),
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == (
        "the ksptrace monitor was taken off the KSP inside the ksptrace.record block "
        "(KSPMonitorCancel or ksp.cancelMonitor()), so a solve after it recorded no iteration; "
        f"no trace written to {path}: cancel monitors before the block, or after it")
    assert not path.exists()


def test_a_gamg_solve_reports_its_set_up_apart(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    """Issue 52: GAMG's PCSetUp runs inside the first KSPSolve; the trace records it, the
    models compare with the iterations' time, and the run's notes say how much set-up was."""
    from ksptrace.studies.variability.run.pipeline import analyze_trace

    _, out, rows = recorded
    trace = read_trace(out / "gamg.h5")
    setup = trace.attrs["setup_max"]
    assert isinstance(setup, float)
    assert 0 < setup < trace.solve_max
    # the set-up (a whole multigrid hierarchy) takes longer than an iteration (one V-cycle)
    assert setup > float(np.median(trace.iteration_seconds))
    a = analyze_trace(trace)
    assert a.setup == setup
    assert a.measured == pytest.approx(trace.solve_max - setup)
    assert any(n.startswith("set-up: ") and "the models and their errors use the iterations'"
               in n for n in a.notes)
    # a few dozen iterations: no distribution is fitted, and a note says why
    assert rows["gamg"]["its"] == trace.iterations
    assert a.bulk is None
    assert any("no distribution fitted: K = " in n for n in a.notes)


def test_recorded_solves_carry_their_waits(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    """Wait accounting (issue 65) through the C hooks; the Python hooks say they have none."""
    nprocs, out, _ = recorded
    trace = read_trace(out / "loop.h5")
    if trace.attrs["monitor"] == "python":
        assert trace.wait_seconds is None
        assert "Python solve hooks" in str(trace.attrs["wait_accounting"])
        return
    assert trace.wait_seconds is not None
    assert trace.mpi_calls is not None
    assert trace.wait_seconds.shape == trace.iteration_seconds.shape
    assert (trace.wait_seconds <= trace.iteration_seconds).all()
    if nprocs == 1:  # sequential vectors: hardly a reduction reaches MPI
        assert trace.mpi_calls.sum() < 0.1 * trace.iterations
    else:  # CG: every iteration reduces, on both ranks alike
        assert (trace.mpi_calls >= 1).all()
        assert (trace.mpi_calls[0] == trace.mpi_calls[1]).all()


def test_recorded_solves_carry_their_events(
    recorded: tuple[int, Path, dict[str, dict[str, object]]]
) -> None:
    """``events=True`` (issue 65), by the C hooks and the Python ones alike (the spans come
    from the interposer, not the hooks): every CG iteration of every solve multiplies,
    preconditions and takes dot products, within the iteration's time."""
    nprocs, out, _ = recorded
    trace = read_trace(out / "events.h5")
    assert trace.solves is not None
    assert trace.solves.count == 3
    assert bool(trace.attrs["events"]) is True
    assert "VecTDot" in str(trace.attrs["event_functions"])
    ev = trace.event_seconds
    assert ev is not None
    assert ev.shape == (nprocs, trace.iterations, 3)
    assert (ev > 0).all()
    assert (ev.sum(axis=2) <= trace.iteration_seconds).all()
    assert read_trace(out / "loop.h5").event_seconds is None  # only when asked
