"""``ksptrace run --problem iceflow`` as a new user types it (issue 31: GMRES, a default solver,
failed with 'never reported iteration 630', and advice that contradicted the README)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ksptrace.harness.monitoring import eventlog
from ksptrace.trace.read import read_trace

pytestmark = pytest.mark.mpi


def test_the_plainest_iceflow_run_works_with_the_default_solver(ksptrace_cli,
                                                               tmp_path: Path) -> None:
    proc = ksptrace_cli("run", "--problem", "iceflow", "--np", "2", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (path,) = tmp_path.glob("*.h5")
    trace = read_trace(path)
    assert trace.attrs["ksp"] == "gmres"
    assert trace.iterations == 300  # iceflow's own default K
    # the timed solve is a Newton step: its KSPSolve comes from the event, the only one logged
    assert trace.attrs["event_log"] == eventlog.ONLY
    assert trace.attrs["solve_time_source"] == eventlog.EVENT_TIME_SOURCE
    assert float(trace.attrs["solve_event_max"]) == trace.solve_max  # type: ignore[arg-type]


def test_a_solve_done_to_machine_precision_says_so_and_the_advice_works(ksptrace_cli,
                                                                      tmp_path: Path) -> None:
    proc = ksptrace_cli("run", "--problem", "iceflow", "--np", "2", "--iterations", "1000",
                        "--out", str(tmp_path / "a.h5"))
    assert proc.returncode != 0
    line = proc.stderr.strip().splitlines()[0]
    assert "gmres stopped after" in line
    assert "machine precision" in line
    assert "never reported" not in line
    advised = re.search(r"use --iterations (\d+) or fewer", line)
    assert advised, line
    again = ksptrace_cli("run", "--problem", "iceflow", "--np", "2", "--iterations",
                         advised.group(1), "--out", str(tmp_path / "b.h5"))
    assert again.returncode == 0, again.stderr
