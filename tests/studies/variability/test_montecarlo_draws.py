"""The simulation's Johnson S_U draws invert the family's quantile function: scipy's ppf of the
same uniform draws, on any scipy release."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.studies.variability.stats import montecarlo
from ksptrace.studies.variability.stats.fitting import frozen_distribution


@pytest.mark.parametrize("params", [(0.7, 1.3, 2e-4, 3e-5), (-3.0, 0.5, 1e-3, 1e-6),
                                    (12.0, 8.0, 0.0, 1.0), (0.0, 0.3, -5.0, 1e3)])
@pytest.mark.parametrize("size", [1, 7, 1000])
def test_the_draws_are_the_quantiles_of_the_same_uniforms(params: tuple[float, ...],
                                                          size: int) -> None:
    ours_rng, again = np.random.default_rng(5), np.random.default_rng(5)
    ours = montecarlo._draw(frozen_distribution("johnsonsu", params), None, size, ours_rng)
    want = st.johnsonsu(*params).ppf(again.uniform(size=size))
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours, want, rtol=1e-9, atol=1e-12 * abs(params[3]))
    assert ours_rng.bit_generator.state == again.bit_generator.state


def test_other_families_and_normal_limits_keep_their_own_draws() -> None:
    rng, again = np.random.default_rng(1), np.random.default_rng(1)
    frozen = frozen_distribution("gamma", (2.0, 0.0, 1.0))
    assert montecarlo._draw(frozen, None, 5, rng).tobytes() == np.asarray(
        frozen.rvs(size=5, random_state=again)).tobytes()
    normal = montecarlo.NormalLimit(mean=1.0, std=0.5)
    assert montecarlo._draw(frozen, normal, 5, rng).tobytes() == again.normal(
        1.0, 0.5, 5).tobytes()
