"""The fitted density the SSE is computed from is a number on every stack (issue 61): scipy
1.10's nct pdf is NaN at nc = 100, where the engine's nct fits now end, while 1.17's is not;
the SSE came out NaN on one stack and a number on the other."""

from __future__ import annotations

import numpy as np
import scipy.stats as st

from ksptrace.studies.variability.stats.fitting import Histogram, density


class _NoPdf:
    """A frozen distribution whose pdf is NaN everywhere, as scipy 1.10's nct at nc = 100."""

    def __init__(self, frozen: object) -> None:
        self.frozen = frozen

    def pdf(self, x: np.ndarray) -> np.ndarray:
        return np.full(np.shape(x), np.nan)

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return self.frozen.cdf(x)  # type: ignore[attr-defined, no-any-return]


def test_a_pdf_that_is_not_a_number_is_the_cdf_s_slope() -> None:
    frozen = st.gamma(2.0, 1e-4, 2e-5)
    edges = np.linspace(1e-4, 3e-4, 41)
    hist = Histogram(edges=edges, density=np.zeros(40))
    want = frozen.pdf(hist.centres)
    assert np.array_equal(density(frozen, hist), want)  # a finite pdf is used as it is
    got = density(_NoPdf(frozen), hist)
    np.testing.assert_allclose(got, want, rtol=1e-5)
