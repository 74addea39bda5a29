"""Maximum-likelihood fits: parameter recovery, ranking, failures and the effect of subsampling."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability import fitting, outliers, subsampling

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
    effect = subsampling.subsampling_effect(x, sizes=(2_000, 20_000), seed=5)
    assert effect.sizes == (2_000, 20_000, 200_000)
    assert effect.mean_rel_change[-1] == 0.0
    # 20k of 200k values move the mean by < 0.5 % and the 99th percentile by < 2 %.
    assert effect.mean_rel_change[1] < 0.005
    assert effect.q99_rel_change[1] < 0.02
    # A 2k subsample is allowed to be worse, but stays within 5 % for the 99th percentile.
    assert effect.q99_rel_change[0] < 0.05


def test_every_family_is_scored_on_the_same_sample_so_aic_compare_like_for_like() -> None:
    x = _jsu_sample(3000, 6)
    ranking = fitting.fit_candidates(x, ("nct", "norm", "johnsonsu"), fit_size=2000, seed=1)
    sample = fitting.subsample(x, 2000, 1)
    assert fitting.SLOW_FAMILY_CAP["nct"] < 2000
    for fit in sorted(ranking.fits, key=lambda f: f.name != "nct"):  # nct first
        frozen = fit.frozen()
        assert fit.loglik == pytest.approx(float(np.sum(frozen.logpdf(sample))), rel=1e-9)
        assert fit.aic == pytest.approx(2 * len(fit.params) - 2 * fit.loglik)
        assert fit.ks == pytest.approx(float(st.kstest(sample, frozen.cdf).statistic), abs=1e-12)
        assert fit.scored_on == 2000
    nct = ranking.get("nct")
    assert nct is not None
    assert nct.n_fit == fitting.SLOW_FAMILY_CAP["nct"]
    assert nct.n_scored == 2000


def test_outliers_are_found_and_explain_a_fit_that_follows_the_bulk() -> None:
    rng = np.random.default_rng(7)
    bulk = 2.8e-4 * (1 + 0.05 * rng.standard_normal(2000))
    x = np.concatenate([bulk, rng.uniform(8e-3, 28e-3, 60)])
    found = outliers.outliers(x)
    assert found is not None
    assert found.count == 60
    assert 8e-3 <= found.low < found.high <= 28e-3
    assert found.clean_mean == pytest.approx(bulk.mean())
    assert outliers.outliers_explain_mean(x, 2.8e-4, 0.5) == found
    # A fitted mean far from the bulk too is not explained by the outliers.
    assert outliers.outliers_explain_mean(x, 2.8e-3, 0.5) is None
    assert outliers.outliers(bulk) is None


def test_a_collapsed_johnson_su_fit_is_told_from_a_regular_one() -> None:
    rng = np.random.default_rng(1)
    flat = 1e-5 + 1e-6 * rng.random(100)  # uniform data: the S_U fit runs to its normal limit
    collapsed = fitting.fit_johnsonsu(flat)
    assert abs(collapsed.a) > 1e5
    assert outliers.jsu_collapsed(collapsed, flat)
    assert outliers.jsu_collapsed(fitting.JohnsonSU(-1e8, 1e8, -2000.0, 1e3), flat)
    regular = _jsu_sample(2000, 8)
    assert not outliers.jsu_collapsed(fitting.fit_johnsonsu(regular), regular)


def test_a_fit_says_whether_scipys_optimizer_converged() -> None:
    """The flag is scipy's own Nelder-Mead's: the Johnson S_U fit of a golden demo trace stops
    at its iteration limit (as fmin run on the same likelihood says), lognorm converges, and
    norm's closed form has no optimizer; the parameters are those of scipy's plain fit."""
    import warnings
    from pathlib import Path

    import scipy.optimize as so
    import scipy.stats as st

    from ksptrace.studies.variability.fitting import _standardiser, fit_one, histogram
    from ksptrace.trace.read import read_trace

    trace = read_trace(Path(__file__).with_name("golden") / "pgmres-p2-n100000.h5")
    x = trace.iteration_seconds.ravel()
    hist = histogram(x)
    jsu, lognorm, norm = (fit_one(n, x, hist) for n in ("johnsonsu", "lognorm", "norm"))
    centre, spread = _standardiser(x)
    z = (x - centre) / spread
    dist = st.johnsonsu
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        start = dist._fitstart(z)
        func = dist._reduce_func(start, {}, data=z)[1]
        flag = so.fmin(func, start, args=(z,), disp=0, full_output=True)[4]
        plain = dist.fit(z)
    assert flag != 0  # this sample needs more than 800 iterations
    assert jsu.converged is False
    assert jsu.params[:2] == pytest.approx(plain[:2], rel=1e-12)
    assert lognorm.converged is True
    assert norm.converged is None


def test_a_prepared_sample_gives_the_same_fits() -> None:
    """fit_candidates prepares the sample once for all families: the same fits to the bit."""
    x = np.random.default_rng(3).lognormal(-9, 0.3, 3000)
    hist = fitting.histogram(x, bins=50)
    prepared = fitting.prepare(x)
    for name in ("johnsonsu", "gamma", "norm"):
        assert fitting.fit_one(name, prepared, hist) == fitting.fit_one(name, x, hist)
    with pytest.raises(AnalysisError, match="all values are equal"):
        fitting.prepare(np.full(20, 1e-4))


def test_a_two_valued_sample_is_not_called_constant() -> None:
    """Issue 50: a random subsample of a two-valued sample can draw one value only; the fits
    then said "all values are equal", which the sample is not."""
    from ksptrace.studies.variability.fitting import fit_candidates

    x = np.full(200_000, 1e-4)
    x[:2] = 2e-4
    ranking = fit_candidates(x, ("norm", "gamma"), fit_size=10_000)
    assert ranking.failed == tuple(
        (name, "the 10,000 values drawn at random to fit are all equal (0.0001); only 2 of "
         "all 200,000 differ from it, too few to fit a distribution") for name in ("norm", "gamma"))
    with pytest.raises(AnalysisError, match="the 10,000 values drawn at random to fit are all"):
        fitting.fit_johnsonsu(x, fit_size=10_000)
    with pytest.raises(AnalysisError, match="all values are equal"):  # a truly constant one
        fit_candidates(np.full(1000, 1e-4), ("norm",)).best.name  # noqa: B018
