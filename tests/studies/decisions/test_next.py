"""Where to measure next: boundaries, close calls, unmeasured cells, and the campaign file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.jobs.campaign_file import load_campaign_file
from ksptrace.studies.decisions.maps import DecisionMap, decision_map
from ksptrace.studies.decisions.next_points import campaign_toml, suggest_next


def labelled(labels: np.ndarray, p: list[int], n: list[int], margin: float = 0.5,
             drop: tuple[tuple[int, int], ...] = ()) -> DecisionMap:
    """Two methods; the winner per cell is ``labels``, the loser ``1 + margin`` times slower."""
    rows = []
    for i, pv in enumerate(p):
        for j, nv in enumerate(n):
            if (i, j) in drop:
                continue
            for m in range(2):
                rows.append((pv, nv, f"m{m}", 1.0 if labels[i, j] == m else 1.0 + margin))
    a, b, meth, t = zip(*rows, strict=True)
    return decision_map(np.array(a), np.array(b), np.array(meth), np.array(t), ("nprocs", "n"))


def test_a_vertical_boundary_gives_the_midpoints_along_it() -> None:
    labels = np.array([[0, 0, 1, 1]] * 3)
    dm = labelled(labels, [2, 8, 32], [1000, 4000, 16000, 64000])
    s = suggest_next(dm)
    assert [(p.a, p.b, p.reason) for p in s.points] == [
        (2.0, 8000.0, "boundary"), (8.0, 8000.0, "boundary"), (32.0, 8000.0, "boundary")]
    assert "between m0 (n=4000) and m1 (n=16000) at nprocs=2" in s.points[0].detail


def test_integer_axes_round_and_skip_pairs_with_nothing_between() -> None:
    labels = np.array([[0, 0], [1, 1]])
    assert suggest_next(labelled(labels, [1, 2], [10, 20])).points == ()
    s = suggest_next(labelled(labels, [1, 3], [10, 20]))
    assert [p.a for p in s.points] == [2.0, 2.0]
    s = suggest_next(labelled(labels, [4, 8], [10, 20]))
    assert [p.a for p in s.points] == [6.0, 6.0]  # round(sqrt(32)) = 6
    s = suggest_next(labelled(labels, [1, 2], [10, 20]), integer_axes=(False, True))
    assert [p.a for p in s.points] == pytest.approx([2 ** 0.5] * 2)


def test_close_calls_are_found_at_the_tolerance_and_not_beyond() -> None:
    labels = np.zeros((2, 2), dtype=int)
    near = labelled(labels, [2, 4], [10, 20], margin=0.04)
    assert {p.reason for p in suggest_next(near, close=0.05).points} == {"close"}
    assert len(suggest_next(near, close=0.05).points) == 4
    assert suggest_next(near, close=0.03).points == ()
    assert "m1 within 4.0 % of m0" in suggest_next(near).points[0].detail


def test_unmeasured_cells_come_first_and_the_limit_holds() -> None:
    labels = np.array([[0, 0, 1, 1]] * 4)
    dm = labelled(labels, [2, 4, 8, 16], [10, 100, 1000, 10000], drop=((0, 0),))
    s = suggest_next(dm)
    assert (s.points[0].a, s.points[0].b, s.points[0].reason) == (2.0, 10.0, "unmeasured")
    short = suggest_next(dm, limit=2)
    assert len(short.points) == 2
    assert short.dropped == len(s.points) - 2


def test_every_filled_cell_is_listed_as_unmeasured_before_anything_else() -> None:
    labels = np.array([[0, 0, 1, 1]] * 4)
    drop = ((0, 0), (1, 3), (3, 1))
    dm = labelled(labels, [2, 4, 8, 16], [10, 100, 1000, 10000], drop=drop)
    s = suggest_next(dm)
    unmeasured = [(p.a, p.b) for p in s.points if p.reason == "unmeasured"]
    assert sorted(unmeasured) == [(2.0, 10.0), (4.0, 10000.0), (16.0, 100.0)]
    assert [p.reason for p in s.points[:3]] == ["unmeasured"] * 3
    assert {p.reason for p in s.points[3:]} == {"boundary"}
    # boundaries only between measured neighbours: the row P=4 lost its n=10000 cell, but its
    # n=100 | n=1000 pair is still a boundary
    assert (4.0, 316.0) in [(p.a, p.b) for p in s.points]
    assert "no method was run at nprocs=2, n=10" in s.points[0].detail


def test_a_limit_of_zero_keeps_nothing_and_counts_what_it_dropped() -> None:
    labels = np.array([[0, 0, 1, 1]] * 3)
    dm = labelled(labels, [2, 8, 32], [1000, 4000, 16000, 64000])
    s = suggest_next(dm, limit=0)
    assert (s.points, s.dropped) == ((), 3)
    assert s.axis_names == ("nprocs", "n")
    with pytest.raises(AnalysisError, match="limit"):
        suggest_next(dm, limit=-1)
    with pytest.raises(AnalysisError, match="close"):
        suggest_next(dm, close=-0.1)


def test_the_midpoint_is_arithmetic_when_a_value_is_not_positive() -> None:
    labels = np.array([[0, 1]] * 2)
    s = suggest_next(labelled(labels, [2, 4], [0, 10]))
    assert [(p.a, p.b) for p in s.points] == [(2.0, 5.0), (4.0, 5.0)]
    s = suggest_next(labelled(labels, [2, 4], [-3, 4]), integer_axes=(True, False))
    assert [p.b for p in s.points] == [0.5, 0.5]


def test_boundaries_with_the_smaller_margin_come_first() -> None:
    # m0 wins n=10, m1 wins n=1000 at every P; the loser's margin at P=8 is 10 %, elsewhere 50 %
    rows = []
    for pv in (2, 4, 8):
        loser = 1.1 if pv == 8 else 1.5
        for nv, winner in ((10, 0), (1000, 1)):
            rows += [(pv, nv, f"m{m}", 1.0 if m == winner else loser) for m in range(2)]
    a, b, meth, t = zip(*rows, strict=True)
    dm = decision_map(np.array(a), np.array(b), np.array(meth), np.array(t), ("nprocs", "n"))
    s = suggest_next(dm)
    assert [(p.a, p.b, p.reason) for p in s.points] == [
        (8.0, 100.0, "boundary"), (2.0, 100.0, "boundary"), (4.0, 100.0, "boundary")]
    assert s.points[0].margin == pytest.approx(0.1)


def test_one_winner_everywhere_and_no_close_call_suggests_nothing() -> None:
    dm = labelled(np.zeros((3, 3), dtype=int), [1, 2, 4], [10, 100, 1000])
    assert suggest_next(dm).points == ()
    with pytest.raises(AnalysisError, match="no point to suggest"):
        campaign_toml(suggest_next(dm), {}, dm.methods, "ksp", "x")


def test_the_campaign_file_loads_and_sweeps_the_points(tmp_path: Path) -> None:
    labels = np.array([[0, 0, 1, 1]] * 3)
    dm = labelled(labels, [2, 8, 32], [1000, 4000, 16000, 64000])
    s = suggest_next(dm)
    text = campaign_toml(s, {"problem": "laplace1d", "pc": "jacobi", "iterations": 500},
                         ("gmres", "bcgs"), "ksp", "next-laplace1d")
    path = tmp_path / "next.toml"
    path.write_text(text)
    campaign = load_campaign_file(path)
    assert campaign is not None
    assert "nprocs = [2, 8, 32]" in text
    assert "n = [8000, 8000, 8000]" in text
    assert 'ksp = ["gmres", "bcgs"]' in text


def test_nothing_to_measure_says_so_and_why_there_is_no_campaign_file() -> None:
    from types import SimpleNamespace

    from ksptrace.studies.decisions.tables import next_table

    dm = labelled(np.zeros((2, 3), dtype=int), [2, 8], [1000, 4000, 16000])
    table = next_table(SimpleNamespace(dm=dm, next_points=suggest_next(dm), title="t"),  # type: ignore[arg-type]
                       "next")
    assert table.frame.empty
    assert len(table.notes) == 1
    assert table.notes[0].startswith("Nothing to measure next")
    assert "writes no next.toml" in table.notes[0]
