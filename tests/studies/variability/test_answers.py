"""The report's answers (issue 30): caveats stay with the numbers, headlines rest on clean runs,
the pipelined comparison has intervals or says why it cannot tell."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksptrace.studies.variability.conclusions import answers
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import TraceAnalysis, analyze_trace
from ksptrace.studies.variability.stats.penalty import wait_penalty
from ksptrace.trace.synthetic import synthetic_trace

FEW = AnalysisOptions(candidates=("norm",), mc_runs=2)
LOADED = Flag("machine-loaded", "the machine",
              "other processes used 40 % of the node's CPUs during the solve")


def _run(ksp: str, nprocs: int, seed: int = 1) -> TraceAnalysis:
    return analyze_trace(synthetic_trace(nprocs, 120, 4, ksp, seed=seed), FEW)


def _loaded(a: TraceAnalysis) -> TraceAnalysis:
    return dataclasses.replace(a, flags=(*a.flags, LOADED))


def test_a_loaded_runs_finding_says_so_in_the_same_sentence() -> None:
    runs = [_loaded(_run("gmres", 8)), _loaded(_run("pgmres", 8))]
    said = answers.answer_all(runs)
    for answer in said:
        headline = answer.sentences[0]
        if answer.key == "pipelined":
            assert "Cannot tell on this data" in headline
            assert "machine-loaded" in headline
        else:
            assert "none clean (2 machine-loaded)" in headline, (answer.key, headline)
    # The same runs without the flag: no caveat, and the pair is compared with intervals.
    clean = answers.answer_all([_run("gmres", 8), _run("pgmres", 8)])
    assert not any("machine-loaded" in s for a in clean for s in a.sentences)
    pair = next(a for a in clean if a.key == "pipelined")
    assert "95 % interval" in pair.sentences[1]
    assert "1 clean pairs" not in pair.sentences[-1]
    assert pair.sentences[-1].startswith("In ")


def test_headlines_leave_flagged_runs_out_and_say_how_many() -> None:
    runs = [_run("gmres", 8), _loaded(_run("gmres", 16, seed=2)), _run("cg", 8)]
    basis = answers.basis(runs)
    assert len(basis.runs) == 2
    assert basis.clause == "2 clean runs; 1 flagged run left out"
    models = answers.models(runs)
    assert "(2 clean runs; 1 flagged run left out" in models.sentences[0]


def test_oversubscribed_and_log_on_are_caveats_too() -> None:
    a = _run("gmres", 8)
    over = dataclasses.replace(a, attrs=(*a.attrs, ("oversubscribed", True)))
    log = dataclasses.replace(a, flags=(Flag("log-on", "timings", "event log on"),))
    assert answers.caveats(over) == ("oversubscribed",)
    assert answers.caveats(log) == ("PETSc's event log on",)
    assert answers.caveats(a) == ()


def test_pairs_below_three_ranks_cannot_tell_and_say_why() -> None:
    said = answers.pipelined([_run("gmres", 2), _run("pgmres", 2)])
    assert said.sentences[0].startswith("Cannot tell on this data: every pair ran at P < 3")
    assert "For what it shows: synthetic n = 10⁶, P = 2" in said.sentences[2]
    # one answer (issue 62): an answer that cannot tell never says who paid less
    assert "paid less" not in said.sentences[2]
    assert "paid more" not in said.sentences[2]
    assert said.sentences[2].endswith("; not a verdict (see above).")
    alone = answers.pipelined([_run("gmres", 8)])
    assert "no standard and pipelined pair" in alone.sentences[0]


def test_the_wait_penalty_separates_lockstep_from_rank_sums() -> None:
    """Ranks that take turns being slow: the lockstep sum pays every turn, the rank sums
    average it out; each point lies inside its interval."""
    rng = np.random.default_rng(3)
    t = 1e-4 * (1.0 + 0.05 * rng.random((8, 400)))
    slow = rng.integers(0, 8, 400)
    t[slow, np.arange(400)] *= 2.0
    p = wait_penalty(t, seed=1)
    assert p is not None
    assert p.lockstep.pct == pytest.approx(100 * (t.max(0).sum() / t.mean(0).sum() - 1))
    assert p.rank_sum.pct == pytest.approx(100 * (t.sum(1).max() / t.mean(0).sum() - 1))
    assert p.lockstep.pct > 70 > 10 > p.rank_sum.pct
    for iv in (p.lockstep, p.rank_sum):
        assert iv.low <= iv.pct <= iv.high
    assert wait_penalty(np.zeros((2, 0))) is None
    assert "-0.0" not in dataclasses.replace(p.rank_sum, pct=-0.01, low=-0.04, high=0.2).text()


def _stack(a: TraceAnalysis, petsc: str, mpi: str) -> TraceAnalysis:
    return dataclasses.replace(a, attrs=(*a.attrs, ("petsc_version", petsc),
                                         ("mpi_library", mpi)))


def test_a_report_that_mixes_stacks_says_so() -> None:
    """Runs from two PETSc builds (issue 34): the fastest-solver answer says so; from one, not."""
    one = [_stack(_run("gmres", 4), "3.18.5", "Open MPI v4.1.4"),
           _stack(_run("pgmres", 4), "3.18.5", "Open MPI v4.1.4")]
    assert answers.stacks(one) is None
    assert len(answers.fastest(one).sentences) == 1
    two = [one[0], _stack(_run("pgmres", 4), "3.26.1", "Open MPI v4.1.4")]
    said = answers.fastest(two).sentences[-1]
    assert said.startswith("These runs come from 2 software stacks (1 with PETSc 3.18.5")
    assert "1 with PETSc 3.26.1, Open MPI v4.1.4" in said
    assert said.endswith("compare times within one stack.")


def test_a_debugging_build_is_a_stack_of_its_own() -> None:
    """The same PETSc version built with debugging times differently: named as such."""
    opt = _stack(_run("gmres", 4), "3.26.1", "Open MPI v4.1.4")
    debug = _stack(_run("pgmres", 4), "3.26.1", "Open MPI v4.1.4")
    debug = dataclasses.replace(debug, attrs=(*debug.attrs, ("petsc_debugging", "yes")))
    said = answers.stacks([opt, debug])
    assert said is not None
    assert "1 with PETSc 3.26.1, a debugging build, Open MPI v4.1.4" in said
