"""The square map's encoding with the fewest leaves (issue 32).

The paper's even replication puts boundaries between copies of measured rows off the
quadtree's split lines, so an exact tree needs more leaves than the map has cells (145 leaves
for 42 cells on a real 3 x 14 collectives map). Padding with the last row and column keeps every
measured boundary on a line between two map rows. Neither wins on every map, so both exact trees
are built and the one with fewer leaves is used; a tie keeps the paper's encoding. Either one
reproduces the measured map exactly, and a query reads one map row per measured row (the last
copy), so the penalty of a restricted tree is the penalty of what queries return.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ksptrace.studies.decisions.maps import ENCODINGS, DecisionMap, Encoding, SquareMap, square_map
from ksptrace.studies.decisions.quadtree import build_quadtree


@dataclass(frozen=True)
class EncodingChoice:
    """The chosen square map and the exact tree's leaves under every encoding."""

    square: SquareMap
    leaves: Mapping[Encoding, int]

    @property
    def encoding(self) -> Encoding:
        return self.square.encoding


def compact_square_map(dm: DecisionMap) -> EncodingChoice:
    """The square map whose exact quadtree has the fewest leaves (ties: ``even``)."""
    squares = {e: square_map(dm, e) for e in ENCODINGS}
    leaves = {e: build_quadtree(sq).stats.leaves for e, sq in squares.items()}
    best = min(ENCODINGS, key=lambda e: (leaves[e], ENCODINGS.index(e)))
    return EncodingChoice(square=squares[best], leaves=MappingProxyType(leaves))
