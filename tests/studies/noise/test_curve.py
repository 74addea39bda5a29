"""Q2 as a curve over detour length (issue 62): one verdict per length, stated once."""

from __future__ import annotations

import dataclasses

import numpy as np

from ksptrace.studies.noise import paired
from ksptrace.studies.noise.blocks import PairedStudy
from ksptrace.studies.noise.curve import curve_costs, curve_figures, curve_sentence, curves
from ksptrace.studies.noise.entry import INJECTED, q2_sentences
from ksptrace.studies.variability.conclusions.findings import fmt_time

ITERATION = 250e-6


def _study(ratio: float, difference: float, spread: float, p: float = 0.1) -> PairedStudy:
    rng = np.random.default_rng(int(ratio * 100))
    cost_p = 100e-6 + 5e-6 * rng.standard_normal(4)
    cost_s = cost_p + difference + spread * rng.standard_normal(4)
    est = paired.from_costs(cost_s, cost_p)
    return PairedStudy("gmres", "pgmres", f"exponential:scale={ratio}", 2, 1000, est, 0, 0,
                       detour=ratio * ITERATION, detour_p=p, iteration=ITERATION)


def test_the_curve_gives_each_length_its_interval_and_one_verdict() -> None:
    points = [_study(0.25, 30e-6, 2e-6), _study(1.0, 20e-6, 2e-6), _study(4.0, 3e-6, 20e-6)]
    (found,) = curves(points[::-1])
    assert [s.detour for s in found] == sorted(s.detour for s in points)
    assert curve_sentence(found) == (
        "GMRES vs PGMRES at P = 2, detours of 0.25×, 1×, 4× the 250 µs noise-free iteration in "
        "10 % of iterations (4 paired blocks each): pipelined pays less at 0.25×, 1×; "
        "cannot tell on this data at 4×.")
    text = curve_figures(found)
    for s in found:
        d = s.estimate.difference
        assert f"[95 % {fmt_time(d.low)}, {fmt_time(d.high)}], {s.told()[0]}" in text
    assert points[2].told()[0] == paired.CANNOT_TELL
    assert "Pipelined pays less at 0.25×, 1×; at the other 1 length it cannot be told apart." in (
        text)


def test_no_length_told_says_the_claim_is_not_shown() -> None:
    points = [_study(0.5, 0.0, 30e-6), _study(4.0, 0.0, 30e-6)]
    assert curve_sentence(curves(points)[0]).endswith("cannot tell on this data at 0.5×, 4×.")
    text = curve_figures(curves(points)[0])
    assert "pays less" not in text
    assert "At no length could a difference be told (cannot tell on this data): the paper's " \
        "claim is not shown on this machine." in text


def test_a_length_where_standard_paid_less_is_never_called_untold() -> None:
    points = [_study(0.5, 0.0, 30e-6), _study(2.0, -60e-6, 2e-6), _study(4.0, 0.0, 30e-6)]
    assert points[1].told()[0] == paired.STANDARD_PAYS_LESS
    assert curve_sentence(curves(points)[0]).endswith(
        "cannot tell on this data at 0.5×, 4×; standard pays less at 2×.")
    text = curve_figures(curves(points)[0])
    assert "At no length could a difference be told" not in text
    assert ("where no length differs, one or more of 3 is told apart by chance in 14 % of such "
            "curves, so 1 told of 3 is weak evidence.") in text
    assert ("Standard pays less at 2×; cannot tell on this data at 0.5×, 4×: at no length did "
            "the pipelined method pay less, so the paper's claim is not shown on this machine."
            ) in text


def test_q2_says_a_sweep_as_one_curve_and_a_single_design_with_its_figures() -> None:
    points = [_study(0.25, 30e-6, 2e-6), _study(4.0, 3e-6, 20e-6)]
    lead, figures = q2_sentences(points)
    assert lead == f"{INJECTED} {curve_sentence(points)}"
    assert figures == curve_figures(points)
    single = _study(1.0, 20e-6, 2e-6)
    short, figures = q2_sentences([single])
    assert short == f"{INJECTED} {single.short()}"
    assert figures == single.sentence()
    other_rate = _study(2.0, 20e-6, 2e-6, p=0.3)
    assert len(curves([*points, other_rate])) == 1


def test_the_noise_answer_of_a_sweep_gives_each_length_its_costs() -> None:
    """The demo's noise answer named one detour length of five (the first paired design's
    sentence): a sweep leads with every length's cost per method and the curve's verdicts."""
    points = curves([_study(0.25, 30e-6, 2e-6), _study(4.0, 3e-6, 20e-6)])[0]
    text = curve_costs(points)
    for s in points:
        e = s.estimate
        assert (f"{s.detour / s.iteration:.2g}× GMRES {fmt_time(e.standard_cost.estimate)}, "
                f"PGMRES {fmt_time(e.pipelined_cost.estimate)}") in text
    assert text.startswith("What the injected detours cost per iteration (GMRES and PGMRES at "
                           "P = 2, noisy minus noise-free KSPSolve in the same block, the mean "
                           "over 4 paired blocks), by detour length over the 250 µs noise-free")
    assert text.endswith(curve_sentence(points))


def test_detours_of_one_mean_from_three_families_are_no_curve() -> None:
    """The noise demo's exponential, lognormal and Pareto detours of one mean read as a curve
    "2.5×, 2.5×, 2.5×": a curve sweeps one family's length."""
    points = [dataclasses.replace(_study(2.5 * (1 + k / 100), 0.0, 30e-6),
                                  noise=f"{family}:mean=1ms,p=0.1")
              for k, family in enumerate(("exponential", "lognormal", "pareto"))]
    assert curves(points) == []
    close = [_study(2.5, 0.0, 30e-6), _study(2.55, 0.0, 30e-6)]
    assert curves(close) == []
    assert len(curves([_study(2.5, 0.0, 30e-6), _study(5.0, 0.0, 30e-6)])) == 1


def test_the_first_screen_counts_a_sweep_by_detour_length() -> None:
    """The demo's first screen said "cannot tell in 4 of 5 designs, standard pays less in 1"
    of one sweep: it counts detour lengths and names where the other verdict fell."""
    from ksptrace.studies.noise.entry import verdict_counts

    points = [_study(0.25, 30e-6, 2e-6), _study(1.0, 0.0, 30e-6), _study(4.0, 0.0, 30e-6)]
    assert [p.told()[0] for p in points] == [paired.PIPELINED_PAYS_LESS, paired.CANNOT_TELL,
                                             paired.CANNOT_TELL]
    assert verdict_counts(points) == (
        "GMRES vs PGMRES at P = 2: cannot tell on this data in 2 of 3 detour lengths, "
        "pipelined pays less in 1 (at 0.25× the iteration)")
    families = [dataclasses.replace(p, noise=f"{f}:mean=1") for p, f in
                zip(points, ("exponential", "lognormal", "pareto"), strict=True)]
    assert verdict_counts(families) == (
        "GMRES vs PGMRES at P = 2: cannot tell on this data in 2 of 3 designs, "
        "pipelined pays less in 1")


def test_the_curve_shows_each_methods_wait_under_the_same_detours() -> None:
    """Issue 65: Q2 shows the pipelined method's wait against the standard one's, on the same
    detours, where the traces hold wait times."""
    points = curves([dataclasses.replace(_study(0.5, 0.0, 30e-6), noisy_waits=(0.31, 0.12)),
                     dataclasses.replace(_study(4.0, 0.0, 30e-6), noisy_waits=(0.42, 0.40))])[0]
    text = curve_figures(points)
    assert ("the share of their iteration time the ranks waited in the noisy runs (median over "
            "blocks): 0.5× GMRES 31.0 %, PGMRES 12.0 %; 4× GMRES 42.0 %, PGMRES 40.0 %") in text
    assert "waited in the noisy runs" not in curve_figures(curves(
        [_study(0.5, 0.0, 30e-6), _study(4.0, 0.0, 30e-6)])[0])
