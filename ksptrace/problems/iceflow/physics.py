"""Units, rheology and sliding law of ex48, in its scaled units. Pure numpy.

Lengths, times and masses are rescaled (1 m = 1e-2, 1 s = 1e-7, 1 kg = 1e-12) so that the domain and
the velocities are O(1); the momentum equations are divided by rho*g so that residuals are O(1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

SECONDS_PER_YEAR = 31556926.0
GLEN_N = 3.0


@dataclass(frozen=True)
class Units:
    """One meter, second and kilogram expressed in scaled units."""

    meter: float = 1e-2
    second: float = 1e-7
    kilogram: float = 1e-12

    @property
    def pascal(self) -> float:
        return self.kilogram / (self.meter * self.second**2)

    @property
    def year(self) -> float:
        return SECONDS_PER_YEAR * self.second

    @property
    def rhog(self) -> float:
        """Ice density times gravity (910 kg/m^3 * 9.81 m/s^2)."""
        rho = 910 * self.kilogram / self.meter**3
        grav = 9.81 * self.meter / self.second**2
        return rho * grav


@dataclass(frozen=True)
class Rheology:
    """Glen's law: eta = B/2 (eps + gamma)^((p-2)/2), p = 1 + 1/n, regularized by eps."""

    bd2: float
    exponent: float
    eps: float

    @classmethod
    def glen(cls, units: Units) -> Rheology:
        p = 1.0 + 1.0 / GLEN_N
        softness = 1.0e-16 * units.pascal ** (-GLEN_N) / units.year  # Pa^-n / s
        hardness = softness ** (-1.0 / GLEN_N)
        return cls(bd2=hardness / 2, exponent=(p - 2) / 2, eps=0.5 * (1e-5 / units.year) ** 2)

    def viscosity(self, gamma: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Effective viscosity and its derivative with respect to the second invariant gamma."""
        base = self.eps + gamma
        eta = self.bd2 * np.power(base, self.exponent)
        return eta, self.exponent * eta / base


@dataclass(frozen=True)
class Sliding:
    """Basal friction beta^2 = beta0^2 (eps2 + |u|^2/2 / refgam)^((m-1)/2); m = 1 is linear."""

    irefgam: float
    eps2: float
    exponent: float

    @classmethod
    def power_law(
        cls, units: Units, m: float = 1.0, refvel: float = 100.0, epsvel: float = 1.0
    ) -> Sliding:
        irefgam = 1.0 / (0.5 * (refvel * units.meter / units.year) ** 2)
        eps2 = 0.5 * (epsvel * units.meter / units.year) ** 2 * irefgam
        return cls(irefgam=irefgam, eps2=eps2, exponent=(m - 1) / 2)

    def friction(
        self, rbeta2: FloatArray, gamma: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """beta^2 and its derivative with respect to gamma = |u|^2 / 2."""
        if self.exponent == 0:
            return rbeta2, np.zeros_like(rbeta2)
        base = self.eps2 + gamma * self.irefgam
        beta2 = rbeta2 * np.power(base, self.exponent)
        return beta2, self.exponent * beta2 / base * self.irefgam
