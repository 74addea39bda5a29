"""PETSc's event log during the timed solve (issue 28): only KSPSolve and VecReduceBegin are
logged, the solve is timed with MPI_Wtime, the trace says how each figure was obtained, and a
run with the full log (-log_view) is recorded and flagged."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from ksptrace.harness import eventlog
from ksptrace.studies.variability.options import AnalysisOptions
from ksptrace.studies.variability.pipeline import analyze_trace
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi
FAST = AnalysisOptions(candidates=("norm",), fit_size=1000, mc_runs=2)

COUNTING = """
from petsc4py import PETSc
from ksptrace.harness import eventlog
from ksptrace.problems import registry
inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, 1000, {})
inst.ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=50)
inst.prepare()
print(eventlog.keep_only_needed(PETSc))
events = {name: PETSc.Log.Event(name) for name in ("KSPSolve", "MatMult", "VecNorm", "PCApply")}
inst.solve()
print(" ".join(f"{name}={int(e.getPerfInfo()['count'])}" for name, e in events.items()))
"""


@pytest.mark.usefixtures("require_petsc")
def test_only_the_needed_events_are_logged() -> None:
    proc = subprocess.run([sys.executable, "-c", COUNTING], env=solver_env(PYTHONPATH=str(ROOT)),
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    mode, counts = proc.stdout.split("\n")[:2]
    assert mode == eventlog.ONLY
    assert counts == "KSPSolve=1 MatMult=0 VecNorm=0 PCApply=0"


@pytest.mark.usefixtures("require_petsc")
def test_a_run_records_its_sources_and_wtime_agrees_with_the_event(
        ksptrace_cli, tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    proc = ksptrace_cli("run", "--n", "200000", "--ksp", "cg", "--iterations", "2000",
                        "--np", "2", "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(path)
    assert trace.attrs["event_log"] == eventlog.ONLY
    assert trace.attrs["solve_time_source"] == eventlog.SOLVE_TIME_SOURCE
    assert trace.attrs["reductions_source"] == eventlog.REDUCTIONS_SOURCE
    wtime, event = trace.solve_max, float(trace.attrs["solve_event_max"])  # type: ignore[arg-type]
    assert abs(wtime - event) <= 0.01 * event, (wtime, event)
    counted = int(trace.attrs["reductions_blocking"])  # type: ignore[call-overload]
    assert 3 * 2000 <= counted <= 3 * 2000 + 5  # CG: 3 per iteration, a few to start
    full = tmp_path / "full.h5"
    proc = ksptrace_cli("run", "--n", "200000", "--ksp", "cg", "--iterations", "2000",
                        "--np", "2", "--out", str(full), "-log_view", ":/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert read_trace(full).attrs["event_log"] == eventlog.ALL
    assert read_trace(full).attrs["reductions_blocking"] == counted  # PETSc's count, log or not


@pytest.mark.usefixtures("require_petsc")
def test_a_log_view_run_is_recorded_and_flagged(ksptrace_cli, tmp_path: Path) -> None:
    path = tmp_path / "t.h5"
    view = tmp_path / "log.txt"
    proc = ksptrace_cli("run", "--n", "2000", "--iterations", "300", "--np", "2",
                        "--out", str(path), "-log_view", f":{view}")
    assert proc.returncode == 0, proc.stderr
    assert "MatMult" in view.read_text()  # the user's full log still works
    trace = read_trace(path)
    assert trace.attrs["event_log"] == eventlog.ALL
    codes = [f.code for f in analyze_trace(trace, FAST).flags]
    assert "log-on" in codes



def test_only_full_log_traces_are_flagged() -> None:
    base = synthetic_trace(nprocs=4, iterations=200, ranks_per_node=2)
    flagged = {}
    for value in (eventlog.ONLY, eventlog.ALL, eventlog.ALL + " (the program's own log)", None):
        attrs = {**base.attrs, "reductions_blocking": 10}
        if value is not None:
            attrs["event_log"] = value
        trace = dataclasses.replace(base, attrs=attrs)
        flagged[value] = "log-on" in [f.code for f in analyze_trace(trace, FAST).flags]
    assert flagged == {eventlog.ONLY: False, eventlog.ALL: True,
                       eventlog.ALL + " (the program's own log)": True,
                       None: True}  # an older ksptrace always ran the full log
    assert "log-on" not in [f.code for f in analyze_trace(base, FAST).flags]  # synthetic


TWO_BLOCKS = """
import sys
from petsc4py import PETSc
from mpi4py import MPI
import ksptrace
from ksptrace.problems import registry
inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, 1000, {})
inst.ksp.setTolerances(rtol=1e-6)
inst.prepare()
for k in range(2):
    with ksptrace.record(inst.ksp, f"{sys.argv[1]}/b{k}.h5", comm=MPI.COMM_WORLD):
        inst.reset(); inst.solve()
"""


@pytest.mark.usefixtures("require_petsc")
def test_a_second_record_block_knows_the_log_is_its_own(tmp_path: Path) -> None:
    """The first block begins and narrows the log; the second must not take that running log
    for the program's own full log."""
    proc = subprocess.run([sys.executable, "-c", TWO_BLOCKS, str(tmp_path)],
                          env=solver_env(PYTHONPATH=str(ROOT)), cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    logs = [read_trace(tmp_path / f"b{k}.h5").attrs["event_log"] for k in range(2)]
    assert logs == [eventlog.ONLY, eventlog.ONLY]
