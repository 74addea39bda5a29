"""``ksptrace run --events`` (issue 65): each iteration's time in MatMult, PCApply and the
vector reductions per rank, checked against known truth. A detour of 1 ms injected on rank 1
is spun inside PCApply (the noise wraps the preconditioner), so rank 1's PCApply holds it
whole; rank 0 meets it inside its next reduction, so its VecMDot/VecNorm time holds about
the detour; and every wait in an MPI reduction happens inside the call that made it. Alone,
every iteration still multiplies, preconditions and reduces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.trace.io import read_trace
from ksptrace.trace.model import Trace
from tests.conftest import Runner
from tests.harness.test_waits import DETOUR, NOISE_RANK1

MATMULT, PCAPPLY, REDUCE = 0, 1, 2


def _run(cli: Runner, tmp: Path, nprocs: int, noise: str, *extra: str) -> tuple[Trace, str]:
    out = tmp / f"events-{nprocs}.h5"
    proc = cli("run", "--np", str(nprocs), "--n", str(20_000 * nprocs), "--iterations", "300",
               "--noise", noise, "--events", "--out", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return read_trace(out), proc.stdout


def _every_iteration_timed(trace: Trace) -> np.ndarray:
    ev = trace.event_seconds
    assert ev is not None
    assert ev.shape == (trace.nprocs, trace.iterations, 3)
    assert bool(trace.attrs["events"]) is True
    functions = str(trace.attrs["event_functions"]).split(",")
    assert {"MatMult", "PCApply", "VecMDot", "VecNorm"} <= set(functions), functions
    # GMRES: every iteration multiplies, preconditions, orthogonalises and normalises
    assert (ev > 0).all()
    # the spans lie between the monitor's stamps: together they fit in the iteration
    assert (ev.sum(axis=2) <= trace.iteration_seconds).all()
    return ev


@pytest.mark.mpi
def test_the_detour_is_in_pcapply_and_the_others_wait_in_reductions(ksptrace_cli: Runner,
                                                                    tmp_path: Path) -> None:
    trace, stdout = _run(ksptrace_cli, tmp_path, 2, NOISE_RANK1)
    ev = _every_iteration_timed(trace)
    inj, waits = trace.injected_seconds, trace.wait_seconds
    assert inj is not None
    assert waits is not None
    late = (inj[1] > 0) & (inj[0] == 0)
    assert late.sum() >= 10, late.sum()
    # rank 1 spun inside PCApply: its PCApply holds the whole detour (spun on another clock,
    # perf_counter, hence the 1 %), its typical one far less
    assert (ev[1, late, PCAPPLY] >= 0.99 * inj[1, late]).all()
    assert np.median(ev[1, ~late, PCAPPLY]) < 0.2 * DETOUR
    # rank 0 met it in its reductions, about whole
    assert np.median(ev[0, late, REDUCE] / inj[1, late]) >= 0.8
    # each MPI reduction's wait lies inside the call that made it (same clock, nested calls):
    # a VecMDot or VecNorm, or in the first iteration the first MatMult, which sets up its
    # scatter with a reduction
    assert (ev[:, 1:, REDUCE] >= waits[:, 1:] - 1e-9).all()
    assert (ev[:, :1, MATMULT] + ev[:, :1, REDUCE] >= waits[:, :1] - 1e-9).all()
    assert "events: MatMult" in stdout, stdout
    assert "calls timed per iteration" in stdout, stdout


@pytest.mark.mpi
def test_alone_every_iteration_has_its_events(ksptrace_cli: Runner, tmp_path: Path) -> None:
    trace, _ = _run(ksptrace_cli, tmp_path, 1, "none")
    ev = _every_iteration_timed(trace)
    assert trace.wait_seconds is not None
    assert trace.wait_seconds.sum() < 0.01 * ev[0, :, REDUCE].sum()  # nobody to wait for


@pytest.mark.mpi
def test_events_without_the_interposer_are_one_error(ksptrace_cli: Runner,
                                                     tmp_path: Path) -> None:
    proc = ksptrace_cli("run", "--n", "2000", "--iterations", "10", "--events", "--out",
                        str(tmp_path / "x.h5"), KSPTRACE_MPI_WAITS="off")
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith("ksptrace: error: --events needs the MPI interposer"), lines
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.h5").exists()


def test_the_summary_line_gives_each_kinds_share_and_the_calls_timed() -> None:
    from ksptrace.harness.runner.run import EVENTS_COST, events_note

    shares = [(np.array([1.0, 2.0, 3.0]), 10.0, 8), (np.array([1.0, 0.0, 1.0]), 10.0, 8)]
    assert events_note(shares, 4) == (
        "events: MatMult 10.0 %, PCApply 10.0 %, VecReduce 20.0 % of the iteration time; "
        f"2.0 calls timed per iteration per rank, {EVENTS_COST}")
