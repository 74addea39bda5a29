"""A bound family gives scipy's frozen distribution's values to the bit, without its cost."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.variability.stats import fitting, models
from ksptrace.studies.variability.stats.choices import DEFAULT_CANDIDATES
from ksptrace.studies.variability.stats.frozen import Bound

PARAMS = {"norm": (1e-4, 2e-6), "lognorm": (0.3, 5e-5, 4e-5), "gamma": (3.0, 8e-5, 7e-6),
          "johnsonsu": (-1.2, 1.7, 9e-5, 4e-6), "genextreme": (-0.2, 1e-4, 3e-6),
          "exponweib": (2.0, 1.5, 9e-5, 1e-5), "nct": (6.0, 1.0, 1e-4, 2e-6)}


@pytest.mark.parametrize("name", sorted(set(DEFAULT_CANDIDATES) | {"nct"}))
def test_every_method_is_the_frozen_distributions_bits(name: str) -> None:
    params = PARAMS[name]
    frozen, bound = getattr(st, name)(*params), fitting.frozen_distribution(name, params)
    x = np.linspace(8e-5, 1.3e-4, 57)
    q = np.array([1e-12, 1e-3, 0.25, 0.5, 0.9, 0.999999])
    with np.errstate(all="ignore"):
        for method, arg in (("pdf", x), ("logpdf", x), ("cdf", x), ("sf", x), ("ppf", q),
                            ("isf", q)):
            want = np.asarray(getattr(frozen, method)(arg))
            assert np.asarray(getattr(bound, method)(arg)).tobytes() == want.tobytes(), method
        for method in ("mean", "std", "var", "median", "support"):
            assert np.array_equal(getattr(bound, method)(), getattr(frozen, method)(),
                                  equal_nan=True), method
        assert np.array_equal(bound.interval(0.9), frozen.interval(0.9))
    draws = bound.rvs(size=5, random_state=np.random.default_rng(1))
    assert draws.tobytes() == frozen.rvs(size=5, random_state=np.random.default_rng(1)).tobytes()
    assert np.array_equal(models.mean_of(bound), models.mean_of(frozen), equal_nan=True)


def test_binding_is_much_cheaper_than_freezing() -> None:
    """What the module is for: 200 bindings cost less than a tenth of 200 freezings (CPU time,
    best of three; freezing builds a family's docstrings, binding stores a tuple)."""
    def cost(make: object) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            for i in range(200):
                make(1.0 + i * 1e-3)  # type: ignore[operator]
            best = min(best, time.process_time() - start)
        return best

    freezing = cost(lambda a: st.johnsonsu(a, 1.5, 0.0, 1.0))
    binding = cost(lambda a: Bound(st.johnsonsu, (a, 1.5, 0.0, 1.0)))
    assert binding < 0.1 * freezing
