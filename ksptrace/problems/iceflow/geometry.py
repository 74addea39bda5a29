"""ISMIP-HOM geometries A and C (Pattyn et al. 2008) as ex48 sets them up. Pure numpy.

The surface is the inclined plane s = -x sin(alpha); bed and thickness are evaluated at unwrapped
map-plane coordinates, so a ghost node across the periodic seam continues the incline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ksptrace.errors import UsageError
from ksptrace.problems.iceflow.physics import FloatArray, Units

DOMAIN_LENGTH_M = 10.0e3
"""Side of the periodic map-plane square (ex48 -thi_L)."""


@dataclass(frozen=True)
class HomCase:
    name: str
    no_slip: bool
    """No-slip bed (Dirichlet u = v = 0 at the bed) rather than sliding with friction beta^2."""
    alpha_deg: float
    """Default slope of the surface, in degrees."""


HOM_CASES: dict[str, HomCase] = {
    "A": HomCase("A", no_slip=True, alpha_deg=0.5),
    "C": HomCase("C", no_slip=False, alpha_deg=0.1),
}


def hom_case(name: str) -> HomCase:
    try:
        return HOM_CASES[name.upper()]
    except KeyError:
        valid = ", ".join(HOM_CASES)
        raise UsageError(f"unknown ISMIP-HOM case '{name}'; valid cases: {valid}") from None


@dataclass(frozen=True)
class Domain:
    case: HomCase
    units: Units
    alpha: float
    """Surface slope in radians."""

    @property
    def lx(self) -> float:
        return DOMAIN_LENGTH_M * self.units.meter

    @property
    def ly(self) -> float:
        return DOMAIN_LENGTH_M * self.units.meter

    def columns(self, x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Bed elevation, thickness and friction coefficient beta^2 at map-plane points."""
        u = self.units
        s = -x * np.sin(self.alpha)
        bumps = np.sin(x * 2 * np.pi / self.lx) * np.sin(y * 2 * np.pi / self.ly)
        if self.case.name == "A":
            bed = s - 1000 * u.meter + 500 * u.meter * bumps
            beta2 = np.full_like(bed, 1e30)
        else:
            bed = s - 1000 * u.meter + 0.0 * bumps
            beta2 = 1000 * (1 + bumps) * u.pascal * u.year / u.meter
        return bed, s - bed, beta2


def make_domain(case: str, alpha_deg: float | None, units: Units | None = None) -> Domain:
    hom = hom_case(case)
    deg = hom.alpha_deg if alpha_deg is None else alpha_deg
    return Domain(case=hom, units=units or Units(), alpha=deg * (np.pi / 180))
