"""The pure parts of the ice-flow problem: grid choice, quadrature, and element kernels (element
Jacobians against finite differences of element residuals). No PETSc needed."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.problems.iceflow import elements
from ksptrace.problems.iceflow.elements import BedData, BoolArray, Physics
from ksptrace.problems.iceflow.geometry import make_domain
from ksptrace.problems.iceflow.grid import Grid, check_ranks, choose_grid, rank_split, refined
from ksptrace.problems.iceflow.physics import FloatArray, Rheology, Sliding, Units
from ksptrace.problems.iceflow.quadrature import face_rule, hex_rule
from ksptrace.problems.registry import get


def test_registered_with_ex48_option_names() -> None:
    info = get("iceflow")
    names = {p.name for p in info.params}
    assert {"hom", "mx", "my", "mz", "refine", "quadrature"} <= names
    hom = next(p for p in info.params if p.name == "hom")
    with pytest.raises(UsageError, match="valid values: A, C"):
        hom.check("B")


@pytest.mark.parametrize(
    ("n", "expected"),
    [(100_000, Grid(46, 46, 24)), (1_000_000, Grid(100, 100, 50)), (1, Grid(3, 3, 2))],
)
def test_target_grid(n: int, expected: Grid) -> None:
    coarse, fine = choose_grid(n, None, None, None, 0)
    assert coarse == fine == expected


def test_refinement_as_dmda_refines() -> None:
    assert refined(4, 5, 3, 1) == Grid(8, 10, 5)
    assert refined(4, 4, 3, 2) == Grid(16, 16, 9)
    coarse, fine = choose_grid(1_000_000, None, None, None, 2)
    assert coarse == Grid(25, 25, 13)
    assert abs(fine.unknowns - 1_000_000) < 0.05 * 1_000_000


def test_given_sizes_are_kept_and_the_rest_fills_n() -> None:
    assert choose_grid(100_000, 40, None, None, 0)[1] == Grid(40, 40, 31)
    assert choose_grid(0, 6, 8, 4, 0)[1] == Grid(6, 8, 4)


def test_bad_grids_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="vertical needs at least 2"):
        choose_grid(1000, 6, 6, 1, 0)
    with pytest.raises(UsageError, match="map plane needs at least 3"):
        choose_grid(1000, 2, 6, 4, 0)
    with pytest.raises(UsageError, match="too small for 5 ranks"):
        check_ranks(Grid(3, 3, 10), 5)


def test_rank_split_follows_dmda() -> None:
    # DMSetUp_DA_3D with the vertical unsplit: 2 ranks split map x, 4 ranks give 2 x 2.
    assert rank_split(Grid(6, 6, 4), 2) == (1, 2)
    assert rank_split(Grid(8, 8, 4), 4) == (2, 2)
    assert check_ranks(Grid(3, 3, 2), 2) == (1, 2)


@pytest.mark.parametrize("name", ["gauss", "lobatto"])
def test_hex_rule_is_a_partition_of_unity(name: str) -> None:
    rule = hex_rule(name)
    np.testing.assert_allclose(rule.phi.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(rule.dphi.sum(axis=1), 0.0, atol=1e-15)
    assert rule.weights.sum() == 8.0
    # Point q sits nearest node q (ex48 scales its bed rows with the viscosity at point 0).
    assert (rule.phi.argmax(axis=1) == np.arange(8)).all()


def test_face_rule_integrates_bilinears() -> None:
    face = face_rule()
    np.testing.assert_allclose(face.phi.sum(axis=1), 1.0)
    np.testing.assert_allclose(face.weights @ face.phi, 1.0)  # each basis integrates to 4/4


def _physics(case: str, friction_m: float = 1.0, quadrature: str = "gauss") -> Physics:
    units = Units()
    domain = make_domain(case, None, units)
    return Physics(
        hx=domain.lx / 5, hy=domain.ly / 6, nz=4, rule=hex_rule(quadrature),
        rheology=Rheology.glen(units), sliding=Sliding.power_law(units, m=friction_m),
        rhog=units.rhog, sin_alpha=float(np.sin(domain.alpha)), no_slip=domain.case.no_slip,
    )


def _elements(
    no_slip: bool, count: int = 6
) -> tuple[FloatArray, FloatArray, BoolArray, BedData]:
    rng = np.random.default_rng(3)
    layer = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=float)
    zn = -10.0 + 3.3 * layer[None, :] + 0.3 * rng.standard_normal((count, 8))
    vel = 0.05 + 0.02 * rng.standard_normal((count, 8, 2))
    bottom = np.arange(count) % 2 == 0
    if no_slip:
        vel[bottom, :4] = 0.0
    u = Units()
    beta2 = 1000 * (1 + rng.random((bottom.sum(), 4))) * u.pascal * u.year / u.meter  # HOM C scale
    bed = BedData(thickness0=np.full(bottom.sum(), 10.0), beta2=beta2)
    return zn, vel, bottom, bed


@pytest.mark.parametrize(
    ("case", "friction_m", "quadrature"),
    [("A", 1.0, "gauss"), ("A", 1.0, "lobatto"), ("C", 1.0, "gauss"), ("C", 0.4, "gauss")],
)
def test_element_jacobian_matches_finite_differences(
    case: str, friction_m: float, quadrature: str
) -> None:
    phys = _physics(case, friction_m, quadrature)
    zn, vel, bottom, bed = _elements(phys.no_slip)
    ke = elements.jacobian(zn, vel, bottom, bed, phys)
    step = 1e-7
    fd = np.empty_like(ke)
    for col in range(16):
        dv = np.zeros_like(vel)
        dv[:, col // 2, col % 2] = step
        plus = elements.residual(zn, vel + dv, bottom, bed, phys).reshape(-1, 16)
        minus = elements.residual(zn, vel - dv, bottom, bed, phys).reshape(-1, 16)
        fd[:, :, col] = (plus - minus) / (2 * step)
    assert np.linalg.norm(ke - fd) / np.linalg.norm(ke) < 1e-6
    np.testing.assert_allclose(ke, np.swapaxes(ke, 1, 2), rtol=1e-12, atol=1e-12 * abs(ke).max())


def test_dirichlet_rows_on_a_no_slip_bed() -> None:
    phys = _physics("A")
    zn, vel, bottom, bed = _elements(no_slip=True)
    ke = elements.jacobian(zn, vel, bottom, bed, phys).reshape(-1, 16, 16)[bottom]
    # Bed nodes 1..3 carry no rows in a bottom element; node 0 has only a diagonal.
    assert not ke[:, 2:8, :].any()
    assert not ke[:, :, :8][:, 8:, :].any()
    assert (np.diagonal(ke[:, :2, :2], axis1=1, axis2=2) > 0).all()
