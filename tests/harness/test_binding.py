"""Each rank's CPU binding in the trace (issue 33: ranks pinned to cores, recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksptrace.harness.launching.mpienv import NodeLayout, cpu_list
from ksptrace.trace.read import read_trace


@pytest.mark.parametrize(("cpus", "text"), [((0,), "0"), ((0, 1), "0-1"), ((0, 1, 2, 5), "0-2,5"),
                                            ((3, 1), "1,3"), ((0, 1, 2, 4, 5, 7), "0-2,4-5,7")])
def test_cpu_lists(cpus: tuple[int, ...], text: str) -> None:
    assert cpu_list(cpus) == text


def _layout(node_ids: tuple[int, ...], rank_cpus: tuple[tuple[int, ...], ...]) -> NodeLayout:
    return NodeLayout(0, "h", len(node_ids), node_ids, False, (), rank_cpus)


def test_pinned_means_one_cpu_of_its_own_per_rank() -> None:
    assert _layout((0, 0), ((0,), (1,))).pinned
    assert not _layout((0, 0), ((0,), (0,))).pinned  # two ranks on one core
    assert not _layout((0, 0), ((0, 1), (0, 1))).pinned  # free to migrate
    assert _layout((0, 1), ((0,), (0,))).pinned  # core 0 of two different nodes
    assert not _layout((0,), ()).pinned  # unknown


@pytest.mark.usefixtures("require_petsc")
@pytest.mark.parametrize("nprocs", [2, 4])
def test_the_trace_records_each_ranks_cpus(ksptrace_cli, tmp_path: Path, nprocs: int) -> None:
    out = tmp_path / "t.h5"
    done = ksptrace_cli("run", "--np", str(nprocs), "--n", "4000", "--iterations", "10",
                        "--out", str(out))
    assert done.returncode == 0, done.stderr
    attrs = read_trace(out).attrs
    masks = str(attrs["rank_cpus"]).split()
    assert len(masks) == nprocs
    singles = [m for m in masks if m.isdigit()]
    assert attrs["ranks_pinned"] == (len(singles) == nprocs and len(set(singles)) == nprocs)
    if attrs["oversubscribed"]:  # more ranks than cores cannot each own one
        assert not attrs["ranks_pinned"]
