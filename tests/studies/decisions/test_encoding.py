"""The square map's encoding (issue 32): on a real 3 x 14 collectives map (the allreduce sweep,
Open MPI 4.1 on 2 cores, sizes 8 B..64 KiB, labelled by the algorithm that ran), the exact tree
reproduces the map with fewer leaves than the paper's construction, and every measured cell
counts once in a restricted tree, whatever the encoding copied."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.decisions.encoding import compact_square_map
from ksptrace.studies.decisions.maps import DecisionMap, SquareMap, decision_map, square_map
from ksptrace.studies.decisions.quadtree import build_quadtree, penalty
from tests.studies.decisions.test_quadtree import synthetic

SWEEP = Path(__file__).resolve().parents[2] / "data" / "collectives" / "allreduce_sweep_map.csv"


def sweep_map(sizes: int = 14) -> DecisionMap:
    rows = list(csv.DictReader(SWEEP.open()))
    keep = set(sorted({int(r["bytes"]) for r in rows})[:sizes])
    rows = [r for r in rows if int(r["bytes"]) in keep]
    return decision_map(np.array([int(r["P"]) for r in rows]),
                        np.array([int(r["bytes"]) for r in rows]),
                        np.array([r["ran"] for r in rows]),
                        np.array([float(r["median_seconds"]) for r in rows]), ("P", "bytes"))


def papers_exact_leaves(square: SquareMap) -> int:
    """The paper's exact tree: a block is a leaf only when all its cells, every copy, agree."""
    def count(r0: int, c0: int, s: int) -> int:
        if s == 1 or np.unique(square.cells[r0:r0 + s, c0:c0 + s]).size == 1:
            return 1
        h = s // 2
        return sum(count(r, c, h) for r in (r0, r0 + h) for c in (c0, c0 + h))
    return count(0, 0, square.size)


def _reproduces(dm: DecisionMap, square: SquareMap) -> bool:
    tree = build_quadtree(square)
    a1 = np.r_[dm.axis1[0] - 1, dm.axis1, (dm.axis1[:-1] + dm.axis1[1:]) / 2, dm.axis1[-1] * 2]
    a2 = np.r_[dm.axis2[0] - 1, dm.axis2, (dm.axis2[:-1] + dm.axis2[1:]) / 2, dm.axis2[-1] * 2]
    aa, bb = np.meshgrid(a1, a2, indexing="ij")
    i = np.clip(np.searchsorted(dm.axis1, aa.ravel(), side="right") - 1, 0, None)
    j = np.clip(np.searchsorted(dm.axis2, bb.ravel(), side="right") - 1, 0, None)
    return bool(np.array_equal(tree.query_many(aa.ravel(), bb.ravel()), dm.best[i, j]))


def test_the_real_map_needs_fewer_leaves() -> None:
    dm = sweep_map()
    assert dm.shape == (3, 14)
    choice = compact_square_map(dm)
    paper = papers_exact_leaves(square_map(dm, "even"))
    for encoding in ("even", "padded"):
        assert _reproduces(dm, square_map(dm, encoding)), encoding
    assert choice.leaves[choice.encoding] == min(choice.leaves.values())
    assert choice.leaves[choice.encoding] < paper  # 52 against the paper's 112
    assert build_quadtree(choice.square).stats.leaves == choice.leaves[choice.encoding]
    assert penalty(build_quadtree(choice.square), dm).max == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_every_encoding_reproduces_synthetic_maps(seed: int) -> None:
    dm = synthetic(seed, 5 + 3 * seed, 11 + seed)
    for encoding in ("even", "padded"):
        assert _reproduces(dm, square_map(dm, encoding))
    choice = compact_square_map(dm)
    assert choice.leaves[choice.encoding] <= papers_exact_leaves(square_map(dm, "even"))


def test_a_measured_cell_counts_once_in_a_restricted_tree() -> None:
    """Depth 0 takes the method that wins most measured cells, under either encoding (the
    paper's count over copies let a row copied five times outvote a row copied once)."""
    dm = sweep_map()
    wins = np.bincount(dm.best.ravel(), minlength=len(dm.methods))
    for encoding in ("even", "padded"):
        root = build_quadtree(square_map(dm, encoding), max_depth=0)
        assert int(root.decisions()[0, 0]) == int(np.argmax(wins))


def test_unknown_encoding_is_refused() -> None:
    with pytest.raises(AnalysisError, match="unknown encoding 'spiral'; use one of even, padded"):
        square_map(sweep_map(), "spiral")  # type: ignore[arg-type]
