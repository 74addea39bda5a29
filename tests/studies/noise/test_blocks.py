"""Paired blocks from a campaign's runs (issue 33): runs grouped by their recorded repetition,
the paired verdict leading the noise study's findings, incomplete and loaded blocks counted."""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np
import pytest

from ksptrace.studies.noise import paired
from ksptrace.studies.noise.blocks import paired_studies
from ksptrace.studies.noise.entry import study
from ksptrace.studies.result import StudyResult
from ksptrace.studies.variability.run.flags import Flag
from ksptrace.studies.variability.run.pipeline import TraceAnalysis
from tests.studies.noise.test_compare import OPTIONS, analyses

COST = {"gmres": 60e-6, "pgmres": 20e-6}
"""Noise cost per iteration of each method in the synthetic campaign."""


def campaign(blocks: int = 6, seed: int = 0, own_seeds: bool = False) -> list[TraceAnalysis]:
    """The four analysed runs copied into ``blocks`` repetitions, with KSPSolve times of a
    drifting machine: a block factor, 1 % jitter, and each method's noise cost."""
    rng = np.random.default_rng(seed)
    out = []
    for rep in range(blocks):
        drift = 1 + 0.3 * rng.random()
        for a in analyses():
            noisy = a.injection is not None and a.injection.spec.active
            base = 0.4 + (COST[a.ksp] * a.iterations if noisy else 0.0)
            run = dataclasses.replace(
                a, attrs=(*a.attrs, ("repetition", str(rep))),
                measured=base * drift * (1 + 0.01 * rng.standard_normal()))
            if own_seeds and noisy and a.injection is not None:  # noise_seed_per_repetition
                spec = dataclasses.replace(a.injection.spec, seed=a.injection.spec.seed + rep)
                run = dataclasses.replace(run, injection=dataclasses.replace(a.injection,
                                                                             spec=spec))
            out.append(run)
    return out


def test_blocks_give_the_paired_verdict() -> None:
    (found,) = paired_studies(campaign())
    assert (found.standard, found.pipelined) == ("gmres", "pgmres")
    assert found.estimate.blocks == 6
    assert found.incomplete_blocks == 0
    assert found.estimate.verdict == paired.PIPELINED_PAYS_LESS
    # the cost is 60 µs per iteration times the block's drift (1 to 1.3)
    assert 60e-6 < found.estimate.standard_cost.estimate < 60e-6 * 1.3
    assert 20e-6 < found.estimate.pipelined_cost.estimate < 20e-6 * 1.3
    assert found.estimate.why in found.sentence()
    # one answer per comparison (issue 62): the verdict is said once, from the KSPSolve pairing
    assert found.sentence().count("pays less") == 1
    assert "pipelined pays less (6 paired blocks; noisy minus noise-free KSPSolve" in (
        found.sentence())


def test_a_missing_run_drops_its_block_and_loaded_runs_are_named() -> None:
    runs = campaign()
    runs.pop(5)  # one run of block 1
    flag = Flag(code="machine-loaded", subject="run", message="foreign CPU 60 %")
    runs[0] = dataclasses.replace(runs[0], flags=(*runs[0].flags, flag))
    (found,) = paired_studies(runs)
    assert found.incomplete_blocks == 1
    assert found.estimate.blocks == 5
    assert found.loaded_blocks == 1
    assert "drawn from a loaded machine (1 of 5 blocks" in found.sentence()


def test_blocks_with_their_own_seeds_are_one_design() -> None:
    (found,) = paired_studies(campaign(own_seeds=True))
    assert found.estimate.blocks == 6
    assert found.noise.endswith("(its own seed in each block)")
    (same,) = paired_studies(campaign())
    assert same.noise.endswith(",seed=3")


def test_runs_without_repetitions_form_no_blocks() -> None:
    assert paired_studies(analyses()) == ()


@functools.cache
def _studied() -> tuple[list[TraceAnalysis], StudyResult | None]:
    """The default campaign and its noise study, computed once (seconds on a loaded machine)."""
    runs = campaign()
    return runs, study(runs, OPTIONS, with_figures=False)


def test_the_noise_study_leads_with_the_verdict() -> None:
    _, result = _studied()
    assert result is not None
    assert result.findings[0].startswith("GMRES vs PGMRES under exponential")
    assert "pipelined pays less" in result.findings[0]


def test_the_in_run_estimate_is_made_from_the_noisy_runs_and_stated() -> None:
    """Each block's two noisy runs give their own detour costs (KSPSolve minus K of their
    undisturbed iterations), paired by block, kept for the record; the sentence gives the
    whole-solve pairing only (issue 62: the model shows the in-run figure biased)."""
    runs = campaign(blocks=8)
    (found,) = paired_studies(runs)
    assert found.in_run is not None
    assert found.in_run.blocks == 8
    noisy = {a.ksp: a for a in runs if a.injection is not None and a.injection.spec.active}
    cost = {k: a.injection.detour_cost(a.measured, a.iterations, a.pipelined)
            for k, a in noisy.items() if a.injection is not None}
    assert all(c is not None for c in cost.values())
    sentence = found.sentence()
    assert sentence.startswith("GMRES vs PGMRES under exponential")
    assert f": {found.told()[0]}" in sentence
    assert "(8 paired blocks; noisy minus noise-free KSPSolve in the same block" in sentence
    assert "inside the runs" not in sentence.lower()  # no verdict, no figure from it


def test_in_run_estimate_covers_a_known_difference_and_a_null() -> None:
    rng = np.random.default_rng(3)
    covered = nulls = 0
    for seed in range(100):
        cs = 60e-6 * 500 + rng.normal(0, 2e-3, 8)  # seconds per run, K = 500
        cp = 40e-6 * 500 + rng.normal(0, 2e-3, 8)
        e = paired.in_run_estimate(cs, cp, 500, seed=seed)
        covered += e.difference.low <= 20e-6 <= e.difference.high
        same = paired.in_run_estimate(cs, cs + rng.normal(0, 2e-3, 8), 500, seed=seed)
        nulls += same.verdict == paired.CANNOT_TELL
    assert covered >= 90
    assert nulls >= 90


def test_e_max_against_the_mean_is_estimated_per_block_and_stated() -> None:
    """The paper's frame: the standard method's Σₖ maxₚ Tₚᵏ and the pipelined method's
    maxₚ Σₖ Tₚᵏ over K times the mean iteration, one value per block, with the blocks'
    range."""
    runs = campaign(blocks=6)
    scale = {"gmres": 1.5, "pgmres": 1.1}
    for i, a in enumerate(runs):  # each block's noisy runs: a known ratio, 2 % spread
        if a.injection is not None and a.injection.spec.active:
            k_mean = a.bounds.iterations * a.bounds.mean
            f = scale[a.ksp] * (1 + 0.02 * ((i % 3) - 1))
            runs[i] = dataclasses.replace(a, lockstep_sum=f * k_mean, rank_sum_max=f * k_mean)
    (found,) = paired_studies(runs)
    assert found.over_mean is not None
    std, pip = found.over_mean  # the blocks' range (issue 62: no interval)
    assert std.low == pytest.approx(1.5 * 0.98)
    assert std.high == pytest.approx(1.5 * 1.02)
    assert pip.low <= 1.1 <= pip.high
    sentence = found.sentence()
    assert re.search(r"GMRES's Σₖ maxₚ Tₚᵏ is 1\.\d+ × \(blocks 1\.\d+ to 1\.\d+\)", sentence)
    assert "(E[max] over the mean)" in sentence
    assert paired.block_mean(np.array([1.0, 2.0])) is None  # two blocks: no interval


def test_the_paired_verdict_is_added_to_q2_labelled_as_injected_noise() -> None:
    """Issue 52: on a 2-core machine Q2 cannot compare the methods at scale; the paired noise
    experiment gives it an interval, labelled as injected noise."""
    from ksptrace.report.answers import merged
    from ksptrace.studies.result import Answer, StudyResult
    from ksptrace.studies.variability.conclusions.answers import answer_all

    runs, result = _studied()
    assert result is not None
    (add,) = result.addenda
    assert add.key == "pipelined"
    assert add.basis == "injected noise (paired blocks)"
    assert add.sentences[0].startswith("With injected noise (detours the harness added, not "
                                       "the machine's own")
    own = StudyResult("variability", "", answers=answer_all(runs))
    answers = {a["key"]: a for a in merged([own, result])}
    q2 = answers["pipelined"]  # P = 4 here: the natural pairs tell, the addendum follows
    assert q2["basis"] == "measured"
    assert q2["sentences"][-2:] == list(add.sentences)
    # the noisy runs are not the solver on this machine: left out of the other answers
    assert "12 clean runs; 12 flagged runs left out" in answers["variability"]["sentences"][0]
    # at P < 3 (a 2-core machine) the natural pairs cannot tell: the addendum leads
    small = Answer("pipelined", "Do the pipelined methods pay less?",
                   ("Cannot tell on this data: every pair ran at P < 3.",), basis="cannot tell")
    (q2,) = merged([StudyResult("variability", "", answers=(small,)), result])
    assert q2["basis"] == "injected noise (paired blocks)"
    assert q2["sentences"] == [
        *add.sentences, "Apart from the injected noise (paired blocks), on the runs' own "
        "variability: cannot tell on this data: every pair ran at P < 3."]
    assert "GMRES vs PGMRES at P = 4: " in q2["sentences"][0]


def test_a_ratio_near_one_keeps_the_digits_its_interval_needs() -> None:
    """The report printed "1 × [95 % 1, 1] K·mean" for 1.0004 [1.0001, 1.0007]: three
    significant digits hid the interval (a range over blocks since issue 62); then "1.00040 ×"
    and "1.0000009 ×", more digits than anyone reads (issue 63): a range that needs more than
    four significant digits is given as the excess over K·mean in per cent."""
    from ksptrace.studies.noise.blocks import _times

    assert _times(paired.Interval(1.0004, 1.0001, 1.0007)) == (
        "K·mean + 0.040 % (blocks +0.010 % to +0.070 %)")
    assert _times(paired.Interval(1.0000009, 1.0000001, 1.0000015)) == (
        "K·mean + 0.00009 % (blocks +0.00001 % to +0.00015 %)")
    assert _times(paired.Interval(1.52, 1.31, 1.74)) == "1.52 × (blocks 1.31 to 1.74) K·mean"
    assert _times(paired.Interval(2.0, 2.0, 2.0)) == "2.00 × (blocks 2.00 to 2.00) K·mean"
    assert _times(paired.Interval(1.031, 1.010, 1.043)) == (
        "1.031 × (blocks 1.010 to 1.043) K·mean")
