"""Maximum-likelihood fits: parameter recovery, ranking, failures and the effect of subsampling."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.analysis import fitting
from ksptrace.errors import AnalysisError

TRUE = (1.2, 1.6, 4e-4, 5e-5)
"""Johnson S_U parameters (a, b, loc, scale) on the scale of iteration times."""


def _jsu_sample(size: int, seed: int) -> np.ndarray:
    return st.johnsonsu(*TRUE).rvs(size=size, random_state=np.random.default_rng(seed))


def test_recovers_known_johnson_su_parameters() -> None:
    fit = fitting.fit_johnsonsu(_jsu_sample(40_000, 0))
    assert fit.a == pytest.approx(TRUE[0], rel=0.15)
    assert fit.b == pytest.approx(TRUE[1], rel=0.15)
    assert fit.loc == pytest.approx(TRUE[2], rel=0.05)
    assert fit.scale == pytest.approx(TRUE[3], rel=0.15)
    true = st.johnsonsu(*TRUE)
    for q in (0.1, 0.5, 0.9, 0.99):
        assert float(fit.frozen().ppf(q)) == pytest.approx(float(true.ppf(q)), rel=0.01)


def test_candidates_are_ranked_by_sse_and_the_true_family_wins() -> None:
    x = _jsu_sample(20_000, 1)
    ranking = fitting.fit_candidates(x, ("norm", "johnsonsu", "gamma"), fit_size=5000, seed=2)
    names = [f.name for f in ranking.fits]
    assert names[0] == "johnsonsu"
    assert [f.sse for f in ranking.fits] == sorted(f.sse for f in ranking.fits)
    jsu, norm = ranking.get("johnsonsu"), ranking.get("norm")
    assert jsu is not None
    assert norm is not None
    assert jsu.aic < norm.aic
    assert jsu.ks < norm.ks
    assert ranking.n_fit == 5000
    assert ranking.n_total == 20_000
    # The histogram is a density of all the data: it integrates to the share inside its range.
    h = ranking.histogram
    assert float(np.sum(h.density * np.diff(h.edges))) == pytest.approx(0.998, abs=0.002)
    # Reported log-likelihood is in seconds, not in standardised units.
    assert jsu.loglik == pytest.approx(
        float(np.sum(st.johnsonsu.logpdf(fitting.subsample(x, 5000, 2), *jsu.params))), rel=1e-9
    )


def test_full_candidate_list_fits_or_says_why() -> None:
    x = _jsu_sample(1500, 3)
    ranking = fitting.fit_candidates(x, fitting.DEFAULT_CANDIDATES)
    done = {f.name for f in ranking.fits} | {n for n, _ in ranking.failed}
    assert done == set(fitting.DEFAULT_CANDIDATES)
    assert ranking.best.name in {"johnsonsu", "nct", "exponweib"}


def test_unknown_family_and_constant_data_are_errors() -> None:
    with pytest.raises(AnalysisError, match="johnsonsu"):
        fitting.fit_candidates(np.arange(20.0), ("nosuchdist",))
    with pytest.raises(AnalysisError, match="constant"):
        fitting.fit_johnsonsu(np.full(50, 1e-4))


def test_subsampling_effect_is_small_and_quantified() -> None:
    x = _jsu_sample(200_000, 4)
    effect = fitting.subsampling_effect(x, sizes=(2_000, 20_000), seed=5)
    assert effect.sizes == (2_000, 20_000, 200_000)
    assert effect.mean_rel_change[-1] == 0.0
    # 20k of 200k values move the mean by < 0.5 % and the 99th percentile by < 2 %.
    assert effect.mean_rel_change[1] < 0.005
    assert effect.q99_rel_change[1] < 0.02
    # A 2k subsample is allowed to be worse, but stays within 5 % for the 99th percentile.
    assert effect.q99_rel_change[0] < 0.05
