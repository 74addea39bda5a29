"""Residual and Jacobian assembly on ex48's DMDA, vectorized over elements.

Each rank computes every element touching one of its nodes (its own elements plus one ghost layer
on the low side in x and y) and keeps only the contributions to its own rows, so the rows it
assembles are complete and no off-rank values are sent. Element matrices are summed per node into
a (nodes, 27 neighbours, 2, 2) array by 64 slice additions, then written into a matrix whose CSR
pattern (ex48's box stencil, stored zeros included) was fixed once at build time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from petsc4py import PETSc

from ksptrace.problems.iceflow import elements
from ksptrace.problems.iceflow.elements import BedData, Physics
from ksptrace.problems.iceflow.geometry import Domain
from ksptrace.problems.iceflow.grid import Grid
from ksptrace.problems.iceflow.physics import FloatArray
from ksptrace.problems.iceflow.quadrature import NODE_OFFSETS

IntArray = NDArray[np.intp]

CHUNK_ELEMENTS = 6000
"""Elements per vectorized batch; bounds the temporaries of the Jacobian to about 100 MB."""


def create_dmda(comm: PETSc.Comm, grid: Grid, split: tuple[int, int]) -> PETSc.DMDA:
    """ex48's DMDA: axes (vertical, map y, map x), 2 dof, box stencil of width 1."""
    bt = PETSc.DM.BoundaryType
    da = PETSc.DMDA().create(
        dim=3, dof=2, sizes=(grid.mz, grid.my, grid.mx), proc_sizes=(1, *split),
        boundary_type=(bt.NONE, bt.PERIODIC, bt.PERIODIC),
        stencil_type=PETSc.DMDA.StencilType.BOX, stencil_width=1, comm=comm,
    )
    da.setFieldName(0, "x-velocity")
    da.setFieldName(1, "y-velocity")
    return da


@dataclass(frozen=True)
class Patch:
    """This rank's block of columns: owned x in [xs, xs+xm), y in [ys, ys+ym), all nz levels.
    Ghosted arrays have shape (xm + 2, ym + 2, nz): one ghost column on each side."""

    xs: int
    xm: int
    ys: int
    ym: int
    nz: int

    @classmethod
    def of(cls, da: PETSc.DMDA) -> Patch:
        (zs, ze), (ys, ye), (xs, xe) = da.getRanges()
        (gzs, gze), (gys, gye), (gxs, gxe) = da.getGhostRanges()
        expected = ((zs, ze), (ys - 1, ye + 1), (xs - 1, xe + 1))
        if ((gzs, gze), (gys, gye), (gxs, gxe)) != expected:
            raise RuntimeError("unexpected DMDA ghost layout for the ice-flow problem")
        return cls(xs=xs, xm=xe - xs, ys=ys, ym=ye - ys, nz=ze - zs)

    @property
    def ghost_shape(self) -> tuple[int, int, int]:
        return (self.xm + 2, self.ym + 2, self.nz)

    @property
    def owned_shape(self) -> tuple[int, int, int]:
        return (self.xm, self.ym, self.nz)


def _chunks(patch: Patch) -> list[tuple[int, int]]:
    """Slabs [c0, c1) of element x-indices 0..xm (element ie has its lower corner at ghost ie)."""
    per_slab = max(1, (patch.ym + 1) * (patch.nz - 1))
    step = max(1, CHUNK_ELEMENTS // per_slab)
    return [(c0, min(c0 + step, patch.xm + 1)) for c0 in range(0, patch.xm + 1, step)]


def _gather(ghosted: FloatArray, patch: Patch, c0: int, c1: int) -> FloatArray:
    """Nodal values (slab, ym + 1, nz - 1, 8, ...) of the elements of slab [c0, c1)."""
    parts = [
        ghosted[c0 + di:c1 + di, dj:dj + patch.ym + 1, dk:dk + patch.nz - 1]
        for di, dj, dk in NODE_OFFSETS
    ]
    return np.stack(parts, axis=3)


def _owned_window(patch: Patch, c0: int, c1: int, di: int, dj: int) -> tuple[slice, ...] | None:
    """(target x, target y, source x, source y) slices mapping a slab's node-(di, dj) values to
    owned nodes, or None when the slab touches no owned node through that corner."""
    lo, hi = max(c0, 1 - di), min(c1, patch.xm + 1 - di)
    if hi <= lo:
        return None
    return (
        slice(lo + di - 1, hi + di - 1), slice(0, patch.ym),
        slice(lo - c0, hi - c0), slice(1 - dj, patch.ym + 1 - dj),
    )


def _neighbour_index(di: int, dj: int, dk: int) -> int:
    return (di + 1) * 9 + (dj + 1) * 3 + (dk + 1)


class Assembler:
    """Residual and Jacobian of one ice-flow problem on one rank's patch."""

    def __init__(self, da: PETSc.DMDA, domain: Domain, grid: Grid, phys: Physics) -> None:
        self.da = da
        self.patch = patch = Patch.of(da)
        self.phys = phys
        gx = np.arange(patch.xs - 1, patch.xs + patch.xm + 1, dtype=np.float64)
        gy = np.arange(patch.ys - 1, patch.ys + patch.ym + 1, dtype=np.float64)
        x = (domain.lx * gx / grid.mx)[:, None] * np.ones(gy.size)
        y = np.ones(gx.size)[:, None] * (domain.ly * gy / grid.my)
        bed, thick, beta2 = domain.columns(x, y)
        levels = np.arange(patch.nz, dtype=np.float64)
        self._z = bed[..., None] + thick[..., None] * levels / (patch.nz - 1)
        self._thick = thick
        self._beta2 = beta2
        self._xloc = da.createLocalVec()
        self._build_pattern()

    # -- pattern -----------------------------------------------------------------------------
    def _build_pattern(self) -> None:
        p = self.patch
        nodes = p.xm * p.ym * p.nz
        ghost_ids = np.arange(np.prod(p.ghost_shape), dtype=PETSc.IntType) * 2
        gnode = self.da.getLGMap().apply(ghost_ids).reshape(p.ghost_shape)
        rstart = self.da.getGlobalVec().getOwnershipRange()[0]
        # Stored entries: each owned node x 27 neighbours x 2 x 2, minus neighbours beyond the
        # top or bottom of the column. Flat order is that of the accumulator array.
        ii, jj, kk = np.meshgrid(np.arange(p.xm), np.arange(p.ym), np.arange(p.nz), indexing="ij")
        offs = np.array([(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)])
        nk = kk.reshape(-1, 1) + offs[:, 2]
        valid = (nk >= 0) & (nk < p.nz)  # (nodes, 27)
        ncol = gnode[
            ii.reshape(-1, 1) + 1 + offs[:, 0],
            jj.reshape(-1, 1) + 1 + offs[:, 1],
            np.clip(nk, 0, p.nz - 1),
        ]
        row = rstart + 2 * np.arange(nodes, dtype=np.int64)
        rows = (row[:, None, None, None] + np.arange(2)[None, None, :, None]).repeat(27, axis=1)
        rows = np.broadcast_to(rows, (nodes, 27, 2, 2))
        cols = np.broadcast_to(
            ncol[:, :, None, None].astype(np.int64) + np.arange(2)[None, None, None, :],
            (nodes, 27, 2, 2),
        )
        keep = np.broadcast_to(valid[:, :, None, None], (nodes, 27, 2, 2)).reshape(-1)
        flat = np.flatnonzero(keep)
        r, c = rows.reshape(-1)[flat], cols.reshape(-1)[flat]
        order = np.lexsort((c, r))
        self._take = flat[order].astype(np.int64 if flat.size > 2**31 - 1 else np.int32)
        self.indices = c[order].astype(PETSc.IntType)
        counts = np.bincount(r - rstart, minlength=2 * nodes)
        self.indptr = np.zeros(2 * nodes + 1, dtype=PETSc.IntType)
        np.cumsum(counts, out=self.indptr[1:])

    def create_matrix(self) -> PETSc.Mat:
        n = 2 * int(np.prod(self.patch.owned_shape))
        mat = PETSc.Mat().create(comm=self.da.getComm())
        mat.setSizes(((n, PETSc.DECIDE), (n, PETSc.DECIDE)), bsize=2)
        mat.setType(PETSc.Mat.Type.AIJ)
        mat.setPreallocationCSR((self.indptr, self.indices))
        mat.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
        mat.assemble()
        return mat

    # -- state ---------------------------------------------------------------------------------
    def _ghosted_velocity(self, x: PETSc.Vec) -> FloatArray:
        self.da.globalToLocal(x, self._xloc)
        return self._xloc.getArray(readonly=True).reshape(*self.patch.ghost_shape, 2)

    def _slab(
        self, vel: FloatArray, c0: int, c1: int
    ) -> tuple[FloatArray, FloatArray, NDArray[np.bool_], BedData]:
        p = self.patch
        zn = _gather(self._z, p, c0, c1).reshape(-1, 8)
        ve = _gather(vel, p, c0, c1).reshape(-1, 8, 2)
        layer = np.zeros((c1 - c0, p.ym + 1, p.nz - 1), dtype=bool)
        layer[:, :, 0] = True
        cols = slice(c0, c1), slice(0, p.ym + 1)
        corner = [(0, 0), (1, 0), (1, 1), (0, 1)]
        beta2 = np.stack(
            [self._beta2[c0 + a:c1 + a, b:b + p.ym + 1] for a, b in corner], axis=-1
        ).reshape(-1, 4)
        bed = BedData(thickness0=self._thick[cols].reshape(-1), beta2=beta2)
        return zn, ve, layer.reshape(-1), bed

    # -- residual ------------------------------------------------------------------------------
    def residual(self, x: PETSc.Vec, f: PETSc.Vec) -> None:
        p = self.patch
        vel = self._ghosted_velocity(x)
        out = np.zeros((*p.owned_shape, 2))
        for c0, c1 in _chunks(p):
            zn, ve, bottom, bed = self._slab(vel, c0, c1)
            res = elements.residual(zn, ve, bottom, bed, self.phys)
            res = res.reshape(c1 - c0, p.ym + 1, p.nz - 1, 8, 2)
            for a, (di, dj, dk) in enumerate(NODE_OFFSETS):
                win = _owned_window(p, c0, c1, di, dj)
                if win is None:
                    continue
                tx, ty, sx, sy = win
                out[tx, ty, dk:dk + p.nz - 1] += res[sx, sy, :, a]
        f.getArray()[:] = out.reshape(-1)

    # -- Jacobian ------------------------------------------------------------------------------
    def jacobian_values(self, x: PETSc.Vec) -> FloatArray:
        """Values of the local rows in CSR order."""
        p = self.patch
        vel = self._ghosted_velocity(x)
        acc = np.zeros((*p.owned_shape, 27, 2, 2))
        for c0, c1 in _chunks(p):
            zn, ve, bottom, bed = self._slab(vel, c0, c1)
            ke = elements.jacobian(zn, ve, bottom, bed, self.phys)
            ke = ke.reshape(c1 - c0, p.ym + 1, p.nz - 1, 8, 2, 8, 2)
            for a, (di, dj, dk) in enumerate(NODE_OFFSETS):
                win = _owned_window(p, c0, c1, di, dj)
                if win is None:
                    continue
                tx, ty, sx, sy = win
                for b, (ei, ej, ek) in enumerate(NODE_OFFSETS):
                    s = _neighbour_index(ei - di, ej - dj, ek - dk)
                    acc[tx, ty, dk:dk + p.nz - 1, s] += ke[sx, sy, :, a, :, b, :]
        return acc.reshape(-1)[self._take]

    def jacobian(self, x: PETSc.Vec, mat: PETSc.Mat) -> None:
        values = self.jacobian_values(x)
        mat.setValuesCSR(self.indptr, self.indices, values, PETSc.InsertMode.INSERT)
        mat.assemble()

