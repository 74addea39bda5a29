"""The run page's wait heat map (issue 65): drawn for a trace with wait times, its caption's
numbers those of ksptrace.trace.waits, and left out with a reason otherwise."""

from __future__ import annotations

import dataclasses

import numpy as np

from ksptrace.studies.variability.pages.collector import Collector
from ksptrace.studies.variability.pages.wait_figure import add_wait_map, wait_caption
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.waits import variance_split, wait_share
from tests.studies.variability.test_figure_sets import png_width


def with_waits(nprocs: int = 4, k: int = 60) -> object:
    trace = synthetic_trace(nprocs=nprocs, iterations=k, ranks_per_node=2, seed=3)
    waits = 0.3 * np.asarray(trace.iteration_seconds)
    waits[0] *= 2.5  # rank 0 waits most
    calls = np.full((nprocs, k), 2, dtype=np.int64)
    return dataclasses.replace(trace, wait_seconds=waits, mpi_calls=calls)


def test_the_wait_map_is_drawn_with_the_numbers_of_its_caption() -> None:
    trace = with_waits()
    out = Collector()
    add_wait_map(out, trace)  # type: ignore[arg-type]
    (fig,) = out.result().drawn
    assert fig.key == "wait-map"
    assert 900 <= png_width(fig.png) <= 1100
    share, split = wait_share(trace), variance_split(trace)  # type: ignore[arg-type]
    assert share is not None
    assert split is not None
    assert f"waited {100 * share.share:.1f} % of their iteration time" in fig.caption
    assert share.most_waiting_rank == 0
    assert f"rank 0 most, {100 * share.per_rank.max():.1f} %" in fig.caption
    assert f"own work (Tₚᵏ minus the wait) makes {100 * split.own:.1f} %" in fig.caption


def test_a_trace_without_waits_gets_a_reason_instead() -> None:
    trace = synthetic_trace(nprocs=4, iterations=60, ranks_per_node=2, seed=3)
    out = Collector()
    add_wait_map(out, trace)
    result = out.result()
    assert not result.drawn
    assert any("no wait heat map" in line for line in result.omitted)
    assert wait_caption(trace) is None
