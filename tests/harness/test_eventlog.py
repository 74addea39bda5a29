"""PETSc's event log during the timed solve (issue 28): off by default (reductions from PETSc's
message counters, equal to the event log's counts), only KSPSolve and VecReduceBegin where the
KSPSolve event is needed, the solve timed with MPI_Wtime, the trace says how each figure was
obtained, and a run with the full log (-log_view) is recorded and flagged."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ksptrace.harness.monitoring import counters, eventlog
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from tests.conftest import ROOT, solver_env

pytestmark = pytest.mark.mpi
FAST = AnalysisOptions(candidates=("norm",), fit_size=1000, mc_runs=2)

COUNTING = """
from petsc4py import PETSc
from ksptrace.harness.monitoring import counters, eventlog
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


LOG_OFF = """
from petsc4py import PETSc
from ksptrace.harness.monitoring import eventlog
from ksptrace.problems import registry
inst = registry.get("laplace1d").build(PETSc.COMM_WORLD, 1000, {})
inst.ksp.setTolerances(rtol=0.0, atol=0.0, divtol=1e300, max_it=50)
inst.prepare()
log = eventlog.SolveLog(PETSc, needs_event=False)
before = log.read()
inst.solve()
after = log.read()
print(log.event_log, PETSc.Log.isActive(), after.blocking - before.blocking, after.seconds)
"""


@pytest.mark.usefixtures("require_petsc")
def test_by_default_no_event_log_runs_and_the_counters_count() -> None:
    proc = subprocess.run([sys.executable, "-c", LOG_OFF], env=solver_env(PYTHONPATH=str(ROOT)),
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    # one rank: PETSc reduces nothing across processes, yet nothing is logged either
    assert proc.stdout.split() == [eventlog.OFF, "False", "0.0", "None"]


def _run(ksptrace_cli: Any, path: Path, ksp: str, *extra: str, n: int = 200_000) -> Any:
    proc = ksptrace_cli("run", "--n", str(n), "--ksp", ksp, "--iterations", "2000",
                        "--np", "2", "--out", str(path), *extra)
    assert proc.returncode == 0, proc.stderr
    return read_trace(path)


@pytest.mark.usefixtures("require_petsc")
def test_a_run_records_its_sources_and_wtime_agrees_with_the_event(
        ksptrace_cli, tmp_path: Path) -> None:
    trace = _run(ksptrace_cli, tmp_path / "t.h5", "cg")
    assert trace.attrs["event_log"] == eventlog.OFF
    assert trace.attrs["solve_time_source"] == eventlog.SOLVE_TIME_SOURCE
    assert trace.attrs["reductions_source"] == counters.SOURCE
    assert "solve_event_max" not in trace.attrs  # no log, no event time
    counted = int(trace.attrs["reductions_blocking"])  # type: ignore[call-overload]
    assert 3 * 2000 <= counted <= 3 * 2000 + 5  # CG: 3 per iteration, a few to start
    # the trace names its stack: which PETSc build, configured with which types
    assert trace.attrs["petsc_dir"] == solver_env()["PETSC_DIR"]
    from petsc4py import PETSc

    assert (trace.attrs["petsc_int_bytes"], trace.attrs["petsc_real_bytes"]) == (
        np.dtype(PETSc.IntType).itemsize, np.dtype(PETSc.RealType).itemsize)
    assert trace.attrs["petsc_scalar"] in ("real", "complex")
    assert trace.attrs["petsc_debugging"] == "no"  # Debian's and PyPI's builds are optimised
    assert trace.attrs["monitor"] == "c"
    assert str(trace.attrs["monitor_compiler"])[:1].isdigit()  # gcc's __VERSION__: "12.2.0"
    full = _run(ksptrace_cli, tmp_path / "full.h5", "cg", "-log_view", ":/dev/null")
    assert full.attrs["event_log"] == eventlog.ALL
    assert full.attrs["reductions_source"] == eventlog.REDUCTIONS_SOURCE
    assert full.attrs["reductions_blocking"] == counted  # the counters equal PETSc's event
    wtime, event = full.solve_max, float(full.attrs["solve_event_max"])  # type: ignore[arg-type]
    assert abs(wtime - event) <= 0.01 * event, (wtime, event)  # both measured: they agree


@pytest.mark.usefixtures("require_petsc")
def test_split_phase_counts_equal_the_event_logs_for_pipecg(ksptrace_cli, tmp_path: Path) -> None:
    off = _run(ksptrace_cli, tmp_path / "off.h5", "pipecg", n=20_000)
    on = _run(ksptrace_cli, tmp_path / "on.h5", "pipecg", "-log_view", ":/dev/null", n=20_000)
    assert (off.attrs["event_log"], on.attrs["event_log"]) == (eventlog.OFF, eventlog.ALL)
    for name in ("reductions_blocking", "reductions_split", "ksp_solves"):
        assert off.attrs[name] == on.attrs[name], name
    split = int(off.attrs["reductions_split"])  # type: ignore[call-overload]
    assert 2000 <= split <= 2005
    assert int(off.attrs["reductions_blocking"]) <= 5


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
    own = eventlog.ALL + " (the program's own log)"
    for value in (eventlog.OFF, eventlog.ONLY, eventlog.ALL, own, None):
        attrs = {**base.attrs, "reductions_blocking": 10}
        if value is not None:
            attrs["event_log"] = value
        trace = dataclasses.replace(base, attrs=attrs)
        flagged[value] = "log-on" in [f.code for f in analyze_trace(trace, FAST).flags]
    assert flagged == {eventlog.OFF: False, eventlog.ONLY: False, eventlog.ALL: True,
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
inst.solve()  # the first solve sets the PC up (2 more reductions): every block times the same
for k in range(3):
    if k == 2:
        PETSc.Log.begin()  # the program's own log
    with ksptrace.record(inst.ksp, f"{sys.argv[1]}/b{k}.h5", comm=MPI.COMM_WORLD):
        inst.reset(); inst.solve()
"""


@pytest.mark.usefixtures("require_petsc")
@pytest.mark.parametrize("monitor", ["c", "python"])
def test_record_logs_nothing_and_counts_as_a_programs_own_log_does(
        tmp_path: Path, monitor: str) -> None:
    """Blocks run with no log and count with PETSc's counters; a program that logs keeps its
    log, the trace says so, and the counts agree: with the C hooks (the counters always) and
    with the Python ones (the program's log's events when it logs)."""
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, "-c", TWO_BLOCKS,
                           str(tmp_path)],
                          env=solver_env(PYTHONPATH=str(ROOT), KSPTRACE_MONITOR=monitor),
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    traces = [read_trace(tmp_path / f"b{k}.h5") for k in range(3)]
    assert {t.attrs["monitor"] for t in traces} == {monitor}
    assert [t.attrs["event_log"] for t in traces] == [
        eventlog.OFF, eventlog.OFF, eventlog.ALL + " (the program's own log)"]
    last = counters.SOURCE if monitor == "c" else eventlog.REDUCTIONS_SOURCE
    assert [t.attrs["reductions_source"] for t in traces] == [
        counters.SOURCE, counters.SOURCE, last]
    counts = {t.attrs["reductions_blocking"] for t in traces}
    assert len(counts) == 1, [t.attrs for t in traces]
    assert counts.pop() > 0
    assert traces[0].attrs["solve_time_source"] == eventlog.HOOK_TIME_SOURCE
