"""Q1's reason for the spread (issue 52): the variance split recovers a known deterministic part
on synthetic data, and Q1 names the solver in every sentence with a number."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ksptrace.studies.variability.conclusions import answers
from ksptrace.studies.variability.pages.runs import Analysed
from ksptrace.studies.variability.pages.sections import anchors, run_section
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.studies.variability.stats.cycles import cycle_layout
from ksptrace.studies.variability.stats.variance_split import variance_split
from ksptrace.trace.synthetic import synthetic_trace

P, K, RESTART = 4, 3000, 30


def _gmres_like(rng: np.random.Generator, noise: float) -> tuple[np.ndarray, float, float]:
    """Iteration times whose work grows through a 30-iteration cycle, a slow first iteration,
    and normal noise; the true shares of the first iteration and the cycle."""
    pos = np.arange(K) % RESTART
    work = 1e-4 * (1.0 + 0.05 * pos)
    work[0] += 2e-3
    t = work[None, :] + rng.normal(0.0, noise, (P, K))
    grand = work.mean()
    total = work.var() + noise**2
    first = (work[0] - grand) ** 2 / K / total
    cycle = ((work[1:] - grand) ** 2).sum() / K / total
    return t, first, cycle


@pytest.mark.parametrize("noise", [2e-5, 1e-4])
def test_the_split_recovers_a_known_deterministic_part(noise: float) -> None:
    t, first, cycle = _gmres_like(np.random.default_rng(5), noise)
    split = variance_split(t, cycle_layout(K, "gmres", RESTART))
    assert split is not None
    assert split.cycle_length == RESTART
    assert split.cycle == pytest.approx(cycle, abs=0.02)
    assert split.first == pytest.approx(first, abs=0.02)
    assert split.fill == 0.0
    assert split.rest == pytest.approx(1 - first - cycle, abs=0.03)
    assert split.first + split.fill + split.cycle + split.rest == pytest.approx(1.0)


def test_pure_noise_and_no_cycle_leave_everything_to_the_rest() -> None:
    rng = np.random.default_rng(2)
    t = 1e-4 + rng.normal(0.0, 1e-5, (P, K))
    for ksp in ("gmres", "bcgs"):
        split = variance_split(t, cycle_layout(K, ksp, RESTART))
        assert split is not None
        assert split.deterministic < 0.01, ksp  # 31 groups of noise are not a cause
    assert variance_split(np.full((2, 10), 1e-4), cycle_layout(10, "bcgs")) is None


def test_pipeline_fill_is_its_own_cause() -> None:
    layout = cycle_layout(K, "pgmres", RESTART, fill_recorded=True)
    rng = np.random.default_rng(3)
    t = np.where(layout.fill, 2e-5, 1e-4)[None, :] + rng.normal(0.0, 1e-5, (P, K))
    split = variance_split(t, layout)
    assert split is not None
    assert split.has_fill
    share = layout.fill.mean()  # 2 of 32
    cause = share * (1 - share) * 8e-5**2
    assert split.fill == pytest.approx(cause / (cause + 1e-5**2), abs=0.02)
    assert split.cycle < 0.01


def test_q1_names_the_cause_and_the_solver_of_every_change() -> None:
    opt = AnalysisOptions(candidates=("norm",), mc_runs=2)
    runs = [analyze_trace(synthetic_trace(p, 120, 2, ksp, seed=p, spread=s), opt)
            for ksp, s in (("gmres", 0.5), ("bcgs", 0.05)) for p in (1, 2)]
    said = answers.variability(runs).sentences
    assert said[0].startswith("Where an iteration sits (restart-cycle position, pipeline "
                              "fill, first iteration) explains ")
    assert "for BCGS" in said[0]
    assert "for GMRES" in said[0]
    assert "that the paper's fitted distributions describe" in said[0]
    gmres = next(s for s in said if s.startswith("GMRES:"))
    assert "the position in its 30-iteration restart cycle" in gmres
    bcgs = next(s for s in said if s.startswith("BCGS (no restart cycle"))
    # the synthetic level wanders (AR(1) with slow episodes): drift, not randomness (issue 63)
    assert "level shifts and drift take" in bcgs
    assert bcgs.endswith("is random (rank to rank, iteration to iteration).")
    change = next(s for s in said if s.startswith("From P = 1 to P = 2"))
    assert "for BCGS" in change
    assert "for GMRES" in change
    # a run without a split (one iteration) is left out of the medians, not counted as 0
    bare = dataclasses.replace(runs[0], variance=None)
    assert answers.variability([bare]).sentences[0].startswith("The middle half")


def test_a_run_page_gives_the_split_first_and_no_empty_section_at_p1() -> None:
    opt = AnalysisOptions(candidates=("norm",), mc_runs=2)
    a = analyze_trace(synthetic_trace(1, 120, 1, "gmres", seed=3), opt)
    first = run_section(Analysed(a), anchors([Analysed(a)])[0], opt)["parts"][0]
    assert first["lead"].startswith("Where an iteration sits explains ")
    assert "(restart-cycle position " in first["lead"]
    assert first["omitted"] == ["One rank: no per-rank histograms; the histogram of every Tₚᵏ "
                                "is in section 4."]
