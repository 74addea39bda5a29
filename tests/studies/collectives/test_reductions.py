"""Global reductions per iteration from PETSc's -log_view, and the share they explain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives import reductions as rd

LOG_VIEW = (Path(__file__).parents[2] / "data" / "collectives" /
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
    text = (Path(__file__).parents[2] / "data" / "collectives" /
            "log_view_pgmres_P2_K300.txt").read_text()
    count = rd.count_reductions(text, 300)
    assert (count.blocking, count.split) == (12.0, 310.0)  # Reduct misses the Iallreduces
    assert count.per_iteration == pytest.approx(322 / 300)
    gmres = rd.count_reductions(LOG_VIEW, 100)
    assert (gmres.blocking, gmres.split) == (210.0, 0.0)


def test_a_warmup_solve_in_the_log_is_counted() -> None:
    """``ksptrace run --warmup -log_view``: PETSc's log holds the warm-up solve too (KSPSolve
    count 2), so its 1800 reductions belong to 600 iterations (CG: 3 per iteration), not 300."""
    text = (Path(__file__).parents[2] / "data" / "collectives" /
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


def _solver(label: str, nprocs: int, attrs: dict[str, object], seed: int = 0
            ) -> rd.SolverReductions:
    rng = np.random.default_rng(seed)
    return rd.SolverReductions(label, str(attrs.get("ksp", "cg")), nprocs, attrs,
                               rng.normal(300e-6, 20e-6, (nprocs, 200)))


COUNTED = {"ksp": "cg", "reductions_blocking": 600, "reductions_split": 0, "ksp_solves": 1,
           "petsc_iterations": 200}


def test_counts_from_the_trace_attributes() -> None:
    count = rd.count_from_attrs(COUNTED)
    assert (count.blocking, count.split, count.iterations, count.per_iteration) == (
        600.0, 0.0, 200, 3.0)
    assert "counted during the run" in count.describe()
    with pytest.raises(AnalysisError, match=r"no reduction counts .* pass --log-view FILE"):
        rd.count_from_attrs({"ksp": "cg", "petsc_iterations": 200})
    with pytest.raises(AnalysisError, match="ran 3 KSPSolves"):
        rd.count_from_attrs({**COUNTED, "ksp_solves": 3})
    # a ksptrace.record trace of 3 solves: the counts cover all of them
    recorded = rd.count_from_attrs({**COUNTED, "ksp_solves": 3, "solves": 3})
    assert (recorded.calls, recorded.per_iteration) == (3, 3.0)


def test_the_reductions_table_shares_and_what_it_leaves_out() -> None:
    rng = np.random.default_rng(5)
    calls = rng.normal(2e-6, 0.4e-6, 500)
    solvers = [
        _solver("a.h5", 2, COUNTED),
        _solver("b.h5", 2, {**COUNTED, "ksp": "pipecg", "reductions_blocking": 0,
                            "reductions_split": 201, "petsc_iterations": 201}, seed=1),
        _solver("old.h5", 2, {"ksp": "cg", "petsc_iterations": 200}),
        _solver("p4.h5", 4, COUNTED),
        _solver("ice.h5", 2, {**COUNTED, "ksp_solves": 3}),
    ]
    table = rd.reductions_table(solvers, {2: calls})
    frame = table.frame
    assert frame["trace"].tolist() == ["a.h5", "b.h5"]
    assert frame["reductions_per_iteration"].tolist() == [3.0, 1.0]
    expected = rd.reduction_share(solvers[0].iteration_seconds, calls, 3.0, "cg")
    assert frame["mean_share"].iloc[0] == pytest.approx(expected.mean_share)
    assert frame["variance_share"].iloc[0] == pytest.approx(expected.spread_share)
    assert frame["upper_bound"].tolist() == [False, True]
    assert frame["allreduce_mean_us"].iloc[0] == pytest.approx(calls.mean() * 1e6)
    notes = " | ".join(table.notes)
    assert "1 solver trace left out: no default-algorithm allreduce of 8 B at their P" in notes
    assert "1 solver trace left out: this trace has no reduction counts" in notes
    assert "1 solver trace left out: the timed solve ran 3 KSPSolves" in notes


def test_an_empty_reductions_table_still_says_why() -> None:
    table = rd.reductions_table([_solver("old.h5", 2, {"petsc_iterations": 5})], {})
    assert table.frame.empty
    assert table.notes[0].startswith("1 solver trace left out: this trace has no reduction")
