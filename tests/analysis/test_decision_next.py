"""Where to measure next: boundaries, close calls, unmeasured cells, and the campaign file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.analysis.decision import DecisionMap, decision_map
from ksptrace.analysis.decision_next import campaign_toml, suggest_next
from ksptrace.errors import AnalysisError
from ksptrace.jobs.schema import load_campaign_file


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
