"""Trilinear (Q1) hexahedron: basis values and reference derivatives at quadrature points.

Pure numpy.

Local node order is that of ex48: the bottom face counter-clockwise from the element's lower corner
(i,j), (i+1,j), (i+1,j+1), (i,j+1), then the same four nodes one level up. Quadrature points are
listed in the same order (point q is the one nearest node q), which matters because ex48 scales its
Dirichlet rows with the viscosity at point 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.problems.iceflow.physics import FloatArray

GAUSS_POINT = 0.57735026918962573  # 1/sqrt(3), as ex48 writes it

NODE_SIGNS = np.array(
    [[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
     [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]],
    dtype=np.float64,
)
"""Reference coordinates (xi, eta, zeta) of the 8 nodes; xi runs along map x, zeta upwards."""

NODE_OFFSETS = ((NODE_SIGNS + 1) / 2).astype(np.intp)
"""Index offsets (di, dj, dk) of each local node from the element's lower corner."""


@dataclass(frozen=True)
class Rule:
    name: str
    phi: FloatArray
    """(Q, 8) basis values at the points."""
    dphi: FloatArray
    """(Q, 8, 3) reference derivatives d/dxi, d/deta, d/dzeta at the points."""
    weights: FloatArray
    """(Q,) weights on the reference cube [-1, 1]^3."""


def _q1_tables(points: FloatArray, signs: FloatArray) -> tuple[FloatArray, FloatArray]:
    # factors[q, l, d] = (1 + s_ld x_qd) / 2, the 1-D linear factor of node l along direction d.
    factors = (1 + points[:, None, :] * signs[None, :, :]) / 2
    phi = np.prod(factors, axis=2)
    ndim = signs.shape[1]
    dphi = np.empty(factors.shape)
    for d in range(ndim):
        others = np.prod(np.delete(factors, d, axis=2), axis=2)
        dphi[:, :, d] = signs[None, :, d] / 2 * others
    return phi, dphi


def hex_rule(name: str) -> Rule:
    """2x2x2 Gauss, or ex48's 'lobatto': 2-point Lobatto in the map plane, Gauss in the vertical."""
    horizontal = {"gauss": GAUSS_POINT, "lobatto": 1.0}[name]
    points = NODE_SIGNS * np.array([horizontal, horizontal, GAUSS_POINT])
    phi, dphi = _q1_tables(points, NODE_SIGNS)
    return Rule(name=name, phi=phi, dphi=dphi, weights=np.ones(8))


def face_rule() -> Rule:
    """2x2 Gauss on the bottom face (bilinear basis of nodes 0..3), used for basal friction."""
    signs = NODE_SIGNS[:4, :2]
    phi, dphi = _q1_tables(signs * GAUSS_POINT, signs)
    return Rule(name="gauss2d", phi=phi, dphi=dphi, weights=np.ones(4))
