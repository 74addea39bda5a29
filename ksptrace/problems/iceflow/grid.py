"""Grid choice and checks for the ice-flow problem. Pure: no PETSc.

The 3-D DMDA is laid out as ex48 lays it out: its first (fastest) axis is the vertical, never split
across ranks, and its two other axes are the periodic map plane (y, then x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ksptrace.errors import UsageError

MIN_MAP_POINTS = 3
MIN_VERTICAL_POINTS = 2


@dataclass(frozen=True)
class Grid:
    """Points of the computational grid after refinement (x and y are periodic, so points =
    elements there; the vertical has mz points and mz - 1 layers of elements)."""

    mx: int
    my: int
    mz: int

    @property
    def unknowns(self) -> int:
        return 2 * self.mx * self.my * self.mz


def refined(mx: int, my: int, mz: int, levels: int) -> Grid:
    """The grid that ``-da_refine levels`` makes of an (mx, my, mz) DMDA: periodic axes double,
    the vertical axis doubles its intervals."""
    for _ in range(levels):
        mx, my, mz = 2 * mx, 2 * my, 2 * (mz - 1) + 1
    return Grid(mx, my, mz)


def target_map_points(n: int) -> int:
    """Map-plane points m (= mx = my) for about n unknowns with about twice as many points across
    the map plane as in the vertical: 2 m^2 mz = n with mz = m / 2, so m = n^(1/3)."""
    return max(MIN_MAP_POINTS, round(n ** (1 / 3)))


def choose_grid(
    n: int, mx: int | None, my: int | None, mz: int | None, refine: int
) -> tuple[Grid, Grid]:
    """(coarse, fine) grids. Sizes left unset are picked so that the fine grid has about n
    unknowns; mx and my default to each other."""
    if refine < 0:
        raise UsageError(f"--refine must be >= 0, got {refine}")
    scale = 2**refine
    if mx is None and my is None:
        if mz is None:
            m_fine = target_map_points(n)
        else:
            m_fine = round((n / (2 * ((mz - 1) * scale + 1))) ** 0.5)
        mx = my = max(MIN_MAP_POINTS, round(m_fine / scale))
    elif mx is None:
        mx = my
    elif my is None:
        my = mx
    assert mx is not None
    assert my is not None
    if mz is None:
        mz_fine = max(MIN_VERTICAL_POINTS, round(n / (2 * mx * my * scale * scale)))
        mz = max(MIN_VERTICAL_POINTS, round((mz_fine - 1) / scale) + 1)
    if mz < MIN_VERTICAL_POINTS:
        raise UsageError(
            f"the vertical needs at least {MIN_VERTICAL_POINTS} points (--mz), got {mz}"
        )
    if min(mx, my) < MIN_MAP_POINTS:
        raise UsageError(
            f"the map plane needs at least {MIN_MAP_POINTS} points per direction "
            f"(--mx, --my), got {mx} x {my}"
        )
    return Grid(mx, my, mz), refined(mx, my, mz, refine)


def rank_split(grid: Grid, size: int) -> tuple[int, int]:
    """Ranks along map y and map x that PETSc's DMDA picks when the vertical is not split
    (DMSetUp_DA_3D with m = 1 and n, p decided)."""
    # DMDA axes: (vertical, y, x) = (M, N, P) with m = 1 rank on the vertical.
    n_dmda, p_dmda = grid.my, grid.mx
    ny = max(1, int(0.5 + math.sqrt(n_dmda * size / p_dmda)))
    px = 0
    while ny > 0:
        px = size // ny
        if ny * px == size:
            break
        ny -= 1
    if n_dmda > p_dmda and ny < px:
        ny, px = px, ny
    return ny, px


def check_ranks(grid: Grid, size: int) -> tuple[int, int]:
    """Raise a UsageError when the map plane cannot give every rank a column of its own."""
    ny, px = rank_split(grid, size)
    if ny > grid.my or px > grid.mx:
        raise UsageError(
            f"grid {grid.mx} x {grid.my} x {grid.mz} is too small for {size} ranks "
            f"(split {px} x {ny} in the map plane); use more map-plane points or fewer ranks"
        )
    return ny, px
