"""Element residuals and Newton element matrices of the Blatter-Pattyn equations, vectorized over
elements. Pure numpy: arrays in, arrays out.

For each element e the inputs are the 8 nodal elevations ``zn[e]`` and velocities ``vel[e]`` (u, v);
``bottom[e]`` marks elements in the lowest layer, where the bed condition applies. Element matrices
are (E, 16, 16) with row/column index ``2 * node + component``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ksptrace.problems.iceflow.physics import FloatArray, Rheology, Sliding
from ksptrace.problems.iceflow.quadrature import Rule, face_rule

BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class Physics:
    """Everything an element needs besides its own nodal data."""

    hx: float
    hy: float
    nz: int
    """Points in the vertical; the layer thickness at a column is h / (nz - 1)."""
    rule: Rule
    rheology: Rheology
    sliding: Sliding
    rhog: float
    sin_alpha: float
    no_slip: bool
    dirichlet_scale: float = 1.0


@dataclass(frozen=True)
class BedData:
    """Per-element data of the lowest layer: thickness at node 0 and beta^2 at nodes 0..3."""

    thickness0: FloatArray
    beta2: FloatArray


def shape_gradients(zn: FloatArray, phys: Physics) -> tuple[FloatArray, FloatArray]:
    """Physical basis gradients (E, Q, 8, 3) and integration weights (E, Q) on terrain-following
    hexahedra: straight in the map plane, with the vertical coordinate interpolated from ``zn``."""
    ref = phys.rule.dphi
    dz = np.einsum("qld,el->eqd", ref, zn)  # dz/dxi, dz/deta, dz/dzeta
    inv_dzeta = 1.0 / dz[..., 2]
    grad = np.empty((zn.shape[0], *ref.shape))
    rz = ref[None, :, :, 2]
    grad[..., 0] = (ref[None, :, :, 0] - rz * (dz[..., 0] * inv_dzeta)[..., None]) * (2 / phys.hx)
    grad[..., 1] = (ref[None, :, :, 1] - rz * (dz[..., 1] * inv_dzeta)[..., None]) * (2 / phys.hy)
    grad[..., 2] = rz * inv_dzeta[..., None]
    jdet = (phys.hx / 2) * (phys.hy / 2) * dz[..., 2] * phys.rule.weights
    return grad, jdet


def _kinematics(
    vel: FloatArray, grad: FloatArray, rheology: Rheology
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Velocity gradients du, dv (E, Q, 3), viscosity and its derivative (E, Q)."""
    du = np.einsum("eqlc,el->eqc", grad, vel[..., 0])
    dv = np.einsum("eqlc,el->eqc", grad, vel[..., 1])
    gamma = (
        du[..., 0] ** 2 + dv[..., 1] ** 2 + du[..., 0] * dv[..., 1]
        + 0.25 * (du[..., 1] + dv[..., 0]) ** 2 + 0.25 * du[..., 2] ** 2 + 0.25 * dv[..., 2] ** 2
    )
    eta, deta = rheology.viscosity(gamma)
    return du, dv, eta, deta


def _effective_velocity(vel: FloatArray, bottom: BoolArray, phys: Physics) -> FloatArray:
    """With a no-slip bed the bed nodes are eliminated: they enter the interior equations as 0."""
    if not phys.no_slip or not bottom.any():
        return vel
    eff = vel.copy()
    eff[bottom, :4] = 0.0
    return eff


def _dirichlet_diagonal(eta0: FloatArray, thickness0: FloatArray, phys: Physics) -> FloatArray:
    """ex48's scaling of the bed rows: the size of a viscous diagonal entry next to the bed."""
    hx, hy = phys.hx, phys.hy
    hz = thickness0 / (phys.nz - 1)
    scale = 2 * eta0 / phys.rhog * phys.dirichlet_scale
    return np.stack(
        [scale * (hx * hy / hz + hx * hz / hy + 4 * hy * hz / hx),
         scale * (hx * hy / hz + 4 * hx * hz / hy + hy * hz / hx)],
        axis=-1,
    )


def _bed_quadrature(
    vel: FloatArray, beta2n: FloatArray, phys: Physics
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, float]:
    """Velocity, beta^2 and d beta^2 / d gamma at the 4 face points; face basis; face weight."""
    face = face_rule()
    uq = np.einsum("ql,elc->eqc", face.phi, vel[:, :4])
    rbeta2 = beta2n @ face.phi.T
    beta2, dbeta2 = phys.sliding.friction(rbeta2, 0.5 * (uq[..., 0] ** 2 + uq[..., 1] ** 2))
    return uq, beta2, dbeta2, face.phi, 0.25 * phys.hx * phys.hy / phys.rhog


def residual(
    zn: FloatArray, vel: FloatArray, bottom: BoolArray, bed: BedData, phys: Physics
) -> FloatArray:
    """Element residuals (E, 8, 2), already divided by rho*g."""
    grad, jdet = shape_gradients(zn, phys)
    du, dv, eta, _ = _kinematics(_effective_velocity(vel, bottom, phys), grad, phys.rheology)
    w = eta * jdet / phys.rhog
    stress_u = np.stack([4 * du[..., 0] + 2 * dv[..., 1], du[..., 1] + dv[..., 0], du[..., 2]], -1)
    stress_v = np.stack([du[..., 1] + dv[..., 0], 2 * du[..., 0] + 4 * dv[..., 1], dv[..., 2]], -1)
    res = np.empty(vel.shape)
    res[..., 0] = np.einsum("eqlc,eqc->el", grad, stress_u * w[..., None])
    res[..., 1] = np.einsum("eqlc,eqc->el", grad, stress_v * w[..., None])
    # Driving stress rho g grad(s), with the surface slope taken as the constant -sin(alpha).
    res[..., 0] -= phys.sin_alpha * (jdet @ phys.rule.phi)
    if bottom.any():
        if phys.no_slip:
            diag = _dirichlet_diagonal(eta[bottom, 0], bed.thickness0, phys)
            res[bottom, :4] = 0.0
            res[bottom, 0] = diag * vel[bottom, 0]
        else:
            uq, beta2, _, fphi, fw = _bed_quadrature(vel[bottom], bed.beta2, phys)
            res[bottom, :4] += fw * np.einsum("ql,eq,eqc->elc", fphi, beta2, uq)
    return res


def jacobian(
    zn: FloatArray, vel: FloatArray, bottom: BoolArray, bed: BedData, phys: Physics
) -> FloatArray:
    """Newton element matrices (E, 16, 16) consistent with :func:`residual` (ex48's Jacobian: on a
    no-slip bed only the diagonal of the Dirichlet rows is kept)."""
    grad, jdet = shape_gradients(zn, phys)
    du, dv, eta, deta = _kinematics(_effective_velocity(vel, bottom, phys), grad, phys.rheology)
    ne, nq = jdet.shape
    # Picard part: sum_q w eta grad_l^T C grad_m, from the Gram blocks G[e, l, c, m, d].
    flat = grad.reshape(ne, nq, 24)
    gram = (np.swapaxes(flat * (eta * jdet / phys.rhog)[..., None], 1, 2) @ flat)
    gram = gram.reshape(ne, 8, 3, 8, 3)
    ke = np.empty((ne, 8, 2, 8, 2))
    gxx, gyy, gzz = gram[:, :, 0, :, 0], gram[:, :, 1, :, 1], gram[:, :, 2, :, 2]
    gxy, gyx = gram[:, :, 0, :, 1], gram[:, :, 1, :, 0]
    ke[:, :, 0, :, 0] = 4 * gxx + gyy + gzz
    ke[:, :, 0, :, 1] = 2 * gxy + gyx
    ke[:, :, 1, :, 0] = 2 * gyx + gxy
    ke[:, :, 1, :, 1] = 4 * gyy + gxx + gzz
    ke = ke.reshape(ne, 16, 16)
    # Newton part: 2 w eta' (d gamma / d u_l)(d gamma / d u_m).
    shear = 0.5 * (du[..., 1] + dv[..., 0])
    dgamma = np.empty((ne, nq, 8, 2))
    dgamma[..., 0] = np.einsum(
        "eqlc,eqc->eql", grad, np.stack([2 * du[..., 0] + dv[..., 1], shear, 0.5 * du[..., 2]], -1)
    )
    dgamma[..., 1] = np.einsum(
        "eqlc,eqc->eql", grad, np.stack([shear, 2 * dv[..., 1] + du[..., 0], 0.5 * dv[..., 2]], -1)
    )
    dg = dgamma.reshape(ne, nq, 16)
    ke += np.swapaxes(dg * (2 * deta * jdet / phys.rhog)[..., None], 1, 2) @ dg
    if bottom.any():
        if phys.no_slip:
            diag = _dirichlet_diagonal(eta[bottom, 0], bed.thickness0, phys)
            kb = ke[bottom]
            kb[:, :8, :] = 0.0
            kb[:, :, :8] = 0.0
            kb[:, 0, 0] = diag[:, 0]
            kb[:, 1, 1] = diag[:, 1]
            ke[bottom] = kb
        else:
            uq, beta2, dbeta2, fphi, fw = _bed_quadrature(vel[bottom], bed.beta2, phys)
            # d(beta2 u_a)/d u_b = beta2 delta_ab + beta2' u_a u_b, times phi_l phi_m.
            coef = dbeta2[..., None, None] * uq[..., :, None] * uq[..., None, :]
            coef += beta2[..., None, None] * np.eye(2)
            kf = fw * np.einsum("ql,qm,eqab->elamb", fphi, fphi, coef).reshape(-1, 8, 8)
            kb = ke[bottom]
            kb[:, :8, :8] += kf
            ke[bottom] = kb
    return ke
