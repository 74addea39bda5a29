"""The run's estimate and progress lines (issue 66): their text and arithmetic, and where the
driver prints them (never inside a timed region; nothing, and no probe, with --quiet)."""

from __future__ import annotations

import io
import types
from pathlib import Path

import numpy as np
import pytest

from ksptrace.collectives import algorithms, bench, eta


@pytest.mark.parametrize(("seconds", "text"), [
    (0.004, "under 0.01 s"), (0.37, "0.37 s"), (5.62, "5.6 s"), (9.96, "10 s"), (42.4, "42 s"),
    (59.6, "1 min 0 s"), (130.0, "2 min 10 s"), (3599.4, "59 min 59 s"), (3900, "1 h 5 min"),
])
def test_durations_read_as_a_person_says_them(seconds: float, text: str) -> None:
    assert eta.duration(seconds) == text


def test_the_first_round_times_the_rounds() -> None:
    plan = eta.rounds_plan(5.6, 23)  # 3 warm-up rounds + 20 kept, every round over all sizes
    assert plan.total == pytest.approx(128.8)
    assert eta.rounds_line(plan, 76, 3.24) == (
        "collectives: estimated 2 min 9 s for 23 rounds over 76 sizes (the first round took "
        "5.6 s; load 3.2)")


def test_the_sizes_cost_their_preparation_a_cold_repetition_and_warm_ones() -> None:
    plan = eta.sizes_plan([0.1, 0.2, 2.0], [0.05, 1.0, 9.0], [0.01, 0.5, 4.0], 23)
    assert plan.costs == pytest.approx((0.1 + 0.05 + 0.22, 0.2 + 1.0 + 11.0, 2.0 + 9.0 + 88.0))
    assert eta.sizes_line(plan, 23, 6.81, 7.94) == (
        "collectives: estimated 1 min 52 s for 3 sizes x 23 repetitions (a probe of two "
        "repetitions at every size took 6.8 s; load 7.9)")
    assert eta.sizes_plan([0.1], [0.5], [0.2], 1).costs == pytest.approx((0.6,))  # cold only


def test_the_time_left_is_scaled_by_how_the_units_done_went() -> None:
    plan = eta.Plan("size", (1.0, 2.0, 7.0))
    assert plan.left(0, 0.0) == 10.0
    assert plan.left(1, 1.0) == 9.0  # as planned
    assert plan.left(2, 6.0) == 14.0  # twice as slow as planned: the rest too
    assert plan.left(3, 30.0) == 0.0
    assert eta.progress_line(plan, 2, 6.0) == (
        "collectives: size 2 of 3 (elapsed 0:00:06, ETA 0:00:14)")


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_reporter_says_the_estimate_once_then_progress_at_most_every_10_s() -> None:
    out, clock = io.StringIO(), _Clock()
    reporter = eta.Reporter(out, 2.5, now=clock)
    clock.t += 30.0  # (the time before the rounds start counts for nothing)
    reporter.before_rounds(10, 5)
    lines: list[str] = []
    for done in range(1, 11):  # 10 rounds of 4 s each
        clock.t += 4.0
        reporter.after_round(done, 10, 5)
        lines = out.getvalue().splitlines()
    assert lines[0] == ("collectives: timing the first of 10 rounds over 5 sizes for an "
                        "estimate of the run's length")
    lines.pop(0)
    assert lines[0] == ("collectives: estimated 40 s for 10 rounds over 5 sizes (the first "
                        "round took 4.0 s; load 2.5)")
    # the estimate at 4 s; 10 s later at the earliest: round 4 (16 s), then round 7 (28 s);
    # round 10 (40 s) is the last: no line after it
    assert lines[1:] == ["collectives: round 4 of 10 (elapsed 0:00:16, ETA 0:00:24)",
                         "collectives: round 7 of 10 (elapsed 0:00:28, ETA 0:00:12)"]


def test_no_progress_before_a_plan() -> None:
    out = io.StringIO()
    clock = _Clock()
    reporter = eta.Reporter(out, 1.0, now=clock)
    clock.t += 60
    reporter.progress(1)
    assert out.getvalue() == ""


def _fake_run(monkeypatch: pytest.MonkeyPatch, reporter: eta.Reporter | None) -> list[int]:
    """The collectives' sweep on a fake one-rank communicator; the sizes prepared, in order."""
    prepared: list[int] = []

    class Ready:
        def reset(self) -> None:
            pass

    def prepare(op: str, comm: object, nbytes: int) -> Ready:
        prepared.append(nbytes)
        return Ready()

    def time_calls(comm: object, ready: Ready, r: int, warmup: int, wtime: object
                   ) -> tuple[np.ndarray, None]:
        if reporter is not None:  # nothing is printed while a size is being timed
            assert reporter.stream.getvalue().count("\n") == (1 if r > 1 else 0)  # type: ignore[attr-defined]
        return np.zeros(r), None

    monkeypatch.setattr(bench, "prepare", prepare)
    monkeypatch.setattr(bench, "time_calls", time_calls)
    comm = types.SimpleNamespace(Get_rank=lambda: 0, Get_size=lambda: 1,
                                 allgather=lambda x: [x], bcast=lambda x, root=0: x)
    forcing = algorithms.default_forcing("openmpi", "allreduce")
    settings = bench.BenchSettings("allreduce", (8, 16, 32), 2, 1, forcing, Path("x.h5"))
    bench._measure(comm, settings, lambda: 0.0, reporter)
    return prepared


def test_the_probe_runs_every_size_once_before_the_measurement(
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    assert _fake_run(monkeypatch, eta.Reporter(out, 1.0)) == [8, 16, 32, 8, 16, 32]
    assert out.getvalue().startswith("collectives: estimated under 0.01 s for 3 sizes x 3 "
                                     "repetitions (a probe of two repetitions at every size")


def test_quiet_runs_no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fake_run(monkeypatch, None) == [8, 16, 32]
