"""Independent steps of a large trace's analysis run in threads, with the same results in the
same order (issue 35): the lanes themselves, then a whole analysis with and without them."""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from ksptrace.studies.variability.run import lanes, pipeline
from ksptrace.studies.variability.run.lanes import Lanes
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.trace.synthetic import inject_outliers, synthetic_trace, trace_from_times
from tests.studies.variability.golden_values import flatten


def test_a_small_trace_runs_each_step_once_when_first_asked() -> None:
    calls: list[str] = []

    def step(name: str) -> str:
        calls.append(name)
        return name.upper()

    with Lanes(lanes.PARALLEL_ELEMENTS - 1) as side:
        assert not side.parallel
        a, b = side.later(step, "a"), side.later(step, "b")
        assert calls == []  # nothing runs before it is asked for
        assert b.result() == "B"
        assert a.result() == "A"
        assert a.result() == "A"
    assert calls == ["b", "a"]  # the order the analysis asks, each once


def test_a_large_trace_runs_its_steps_in_other_threads_at_once() -> None:
    started = threading.Event()
    where: list[str] = []

    def step() -> int:
        where.append(threading.current_thread().name)
        started.set()
        return 7

    with Lanes(lanes.PARALLEL_ELEMENTS, workers=2) as side:
        assert side.parallel
        later = side.later(step)
        assert started.wait(60)  # started without being asked for
        assert later.result() == 7
    assert len(where) == 1
    assert where[0].startswith("ksptrace-lane")


def _parallel_here() -> bool:
    return Lanes(lanes.PARALLEL_ELEMENTS, workers=2).parallel


def test_a_worker_of_analyze_jobs_runs_its_steps_in_turn() -> None:
    assert _parallel_here()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(_parallel_here).result() is False


@pytest.mark.parametrize("elements", [1, lanes.PARALLEL_ELEMENTS])
def test_a_failing_step_raises_where_its_result_is_asked(elements: int) -> None:
    def fails() -> None:
        raise ValueError("bad step")

    with Lanes(elements, workers=2) as side:
        later = side.later(fails)
        with pytest.raises(ValueError, match="bad step"):
            later.result()


def test_leaving_on_an_error_drops_waiting_steps_and_waits_for_running_ones() -> None:
    release = threading.Event()
    ran: list[int] = []

    def step(i: int) -> int:
        release.wait(60)
        ran.append(i)
        return i

    side = Lanes(lanes.PARALLEL_ELEMENTS, workers=1)
    steps = [side.later(step, i) for i in range(3)]
    waiting = steps[-1]._future
    assert waiting is not None
    waiting.add_done_callback(lambda _: release.set())  # runs when it is cancelled
    side.__exit__(RuntimeError, RuntimeError("stop"), None)  # what leaving on an error does
    assert ran == [0]  # the running step ended before the block was left; the others never ran
    assert all(f._future is not None and f._future.cancelled() for f in steps[1:])


def _same(a: object, b: object) -> None:
    fa, fb = flatten(a), flatten(b)
    assert fa.keys() == fb.keys()
    unequal = [k for k in fa if repr(fa[k]) != repr(fb[k])]
    assert not unequal, unequal[:5]


@pytest.mark.parametrize("noise", ["none", "nonsense!"])
def test_an_analysis_in_lanes_gives_the_same_bits_and_notes(
        monkeypatch: pytest.MonkeyPatch, noise: str) -> None:
    trace = synthetic_trace(nprocs=16, iterations=300, ranks_per_node=4, ksp="pgmres", seed=5)
    times = inject_outliers(trace.iteration_seconds, 0.01, 5.0, 20.0, seed=2)
    trace = dataclasses.replace(trace_from_times(times, trace.node_ids, ksp="pgmres"),
                                attrs={**trace.attrs, "noise": noise})
    options = AnalysisOptions(mc_runs=2, candidates=("norm", "lognorm", "gamma"))
    alone = analyze_trace(trace, options)
    monkeypatch.setattr(lanes, "PARALLEL_ELEMENTS", 1)
    threads: list[str] = []
    real_fit = pipeline.fit_candidates

    def fit_candidates(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real_fit(*args)

    monkeypatch.setattr(pipeline, "fit_candidates", fit_candidates)
    asked: list[str] = []
    beside = analyze_trace(trace, options, lambda step, f: asked.append(step))
    assert len(threads) == 1
    assert threads[0].startswith("ksptrace-lane")
    _same(alone, beside)
    assert alone.notes == beside.notes
    assert alone.flags == beside.flags
    assert (noise == "nonsense!") == any("not understood" in n for n in beside.notes)
    assert asked.index("KS tests") < asked.index("bulk fits") < asked.index("done")
