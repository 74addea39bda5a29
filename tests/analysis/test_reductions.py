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


def test_a_warmup_solve_in_the_log_is_counted() -> None:
    """``ksptrace run --warmup -log_view``: PETSc's log holds the warm-up solve too (KSPSolve
    count 2), so its 1800 reductions belong to 600 iterations (CG: 3 per iteration), not 300."""
    text = (Path(__file__).parents[1] / "data" / "collectives" /
            "log_view_cg_P2_K300_warmup.txt").read_text()
    count = rd.count_reductions(text, 300, solves=1, warmup=True)
    assert (count.blocking, count.iterations, count.calls) == (1800.0, 600, 2)
    assert count.per_iteration == pytest.approx(3.0)
    assert "in 600 iterations of 2 KSPSolve calls" in count.describe()
    with pytest.raises(AnalysisError, match="counts 2 KSPSolve calls but the trace holds 1 "
                                            "solve; give the -log_view of the run"):
        rd.count_reductions(text, 300)


@pytest.mark.parametrize(("calls", "solves", "warmup", "expected"), [
    (1, 1, False, 300), (2, 1, True, 600), (5, 5, False, 300), (5, 5, True, 300),
])
def test_iterations_in_log(calls: int, solves: int, warmup: bool, expected: int) -> None:
    assert rd.iterations_in_log(calls, solves, 300, warmup) == expected


@pytest.mark.parametrize(("calls", "solves", "warmup"), [(2, 1, False), (3, 1, True),
                                                         (0, 1, False), (6, 5, True)])
def test_a_log_of_another_run_is_refused(calls: int, solves: int, warmup: bool) -> None:
    with pytest.raises(AnalysisError, match=f"counts {calls} KSPSolve calls but the trace "
                                            f"holds {solves} solve"):
        rd.iterations_in_log(calls, solves, 300, warmup)
