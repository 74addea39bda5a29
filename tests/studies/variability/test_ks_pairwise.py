"""The pairwise KS matrix behind the heatmap agrees with scipy.stats.ks_2samp pair by pair."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from ksptrace.errors import AnalysisError
from ksptrace.studies.variability.stats import ks


def test_pairwise_matches_scipy_for_every_pair_with_ties() -> None:
    rng = np.random.default_rng(5)
    x = rng.lognormal(0.0, 0.3, size=(9, 250))
    x[3] *= 1.1
    x[4] = np.round(x[4], 1)
    x[5] = np.round(x[5], 2)
    res = ks.pairwise(x, alpha=0.05)
    for i in range(9):
        for j in range(9):
            expected = 0.0 if i == j else st.ks_2samp(x[i], x[j]).statistic
            assert abs(res.statistics[i, j] - expected) <= 1e-12, (i, j)
    assert res.threshold == ks.threshold(250, 250, 0.05)


def test_pairwise_on_chosen_ranks_and_rejected_share() -> None:
    rng = np.random.default_rng(6)
    x = rng.normal(1.0, 0.1, size=(20, 400))
    x[[2, 17]] += 0.2  # two shifted ranks: every pair with one of them is rejected
    res = ks.pairwise(x, ranks=np.array([17, 0, 2, 9]))
    assert res.ranks.tolist() == [17, 0, 2, 9]
    assert res.statistics[1, 3] == pytest.approx(st.ks_2samp(x[0], x[9]).statistic, abs=1e-12)
    assert res.statistics[0, 2] == pytest.approx(st.ks_2samp(x[17], x[2]).statistic, abs=1e-12)
    # pairs (17,0) (17,9) (2,0) (2,9) rejected; (17,2) and (0,9) not: 4 of 6.
    assert res.fraction_rejected == pytest.approx(4 / 6)
    assert not res.rejected.diagonal().any()


def test_pairwise_refuses_one_rank_and_bad_ranks() -> None:
    with pytest.raises(AnalysisError, match="P = 1"):
        ks.pairwise(np.ones((1, 10)))
    with pytest.raises(AnalysisError, match="distinct"):
        ks.pairwise(np.ones((3, 10)), ranks=np.array([0, 0]))
