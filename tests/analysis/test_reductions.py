"""Global reductions per iteration from PETSc's -log_view, and the share they explain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.analysis import reductions as rd
from ksptrace.errors import AnalysisError

LOG_VIEW = (Path(__file__).parents[1] / "data" / "collectives" /
            "log_view_gmres_P2_K100.txt").read_text()


def test_counts_from_petsc_log() -> None:
    # GMRES, classical Gram-Schmidt, 100 iterations, P = 2 (PETSc 3.18): one VecMDot and one
    # VecNorm per iteration, plus the start-up norms
    assert rd.log_view_reductions(LOG_VIEW) == 210.0
    assert rd.log_view_reductions(LOG_VIEW, "VecMDot") == 100.0
    assert rd.reductions_per_iteration(LOG_VIEW, 100) == pytest.approx(2.1)
    with pytest.raises(AnalysisError, match="no KSPSolve event"):
        rd.log_view_reductions("no table here")


def test_shares_recover_a_known_composition() -> None:
    rng = np.random.default_rng(0)
    k, r = 20000, 2
    work = rng.normal(10e-6, 1e-6, k)
    calls = rng.normal(2e-6, 0.5e-6, (r, k))
    iterations = (work + calls.sum(axis=0))[None, :] * np.ones((2, 1))
    share = rd.reduction_share(iterations, rng.normal(2e-6, 0.5e-6, 500), r, "gmres")
    assert share.mean_share == pytest.approx(4 / 14, rel=0.03)
    assert share.spread_share == pytest.approx(0.5 / 1.5, rel=0.15)  # 2*0.25 / (1 + 2*0.25)
    assert not share.pipelined
    assert "explain 28." in share.describe()
    assert "upper bound" in rd.reduction_share(iterations, calls[0], 1, "pipecg").describe()


def test_non_blocking_reductions_of_a_pipelined_method() -> None:
    text = (Path(__file__).parents[1] / "data" / "collectives" /
            "log_view_pgmres_P2_K300.txt").read_text()
    count = rd.count_reductions(text, 300)
    assert (count.blocking, count.split) == (12.0, 310.0)  # Reduct misses the Iallreduces
    assert count.per_iteration == pytest.approx(322 / 300)
    gmres = rd.count_reductions(LOG_VIEW, 100)
    assert (gmres.blocking, gmres.split) == (210.0, 0.0)
