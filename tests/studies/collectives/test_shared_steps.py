"""Breaks shared by PLogP's functions (issue 54): on synthetic curves shaped like Open MPI's
shared-memory transport (4 sizes per doubling, as ``ksptrace collectives --op plogp`` measures),
the eager limit is found in all four functions where each steps there, a function that does
not step there is said not to, and no break is invented on curves without one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ksptrace.collectives.params import message_sizes
from ksptrace.errors import AnalysisError
from ksptrace.studies.collectives.p2p_table import _function, _steps_table
from ksptrace.studies.collectives.pointtopoint import fit_plogp_model
from ksptrace.studies.collectives.shared_steps import fit_shared_steps
from ksptrace.studies.collectives.steps import fit_steps, synthetic_steps

SIZES = np.array(message_sizes("plogp", 1, 1 << 20, 4), np.float64)
SEEDS = range(30)
Curve = tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]]


def _curve(values_at: tuple[float, ...], slopes: tuple[float, ...], breaks: tuple[int, ...]
           ) -> Curve:
    """Pieces given by their value where they start (0 for the first) and their slope."""
    starts = (0, *breaks)
    return (tuple(v - s * b for v, s, b in zip(values_at, slopes, starts, strict=True)), slopes,
            breaks)


# Shaped like this machine's measurement (docs/collectives.md): o_r 6x at the eager limit,
# g rising across the eager range and then 10 % lower, o_s and RTT/2 a little higher.
O_S = _curve((0.13e-6, 0.90e-6, 1.75e-6), (1e-11, 2e-10, 3.3e-11), (304, 4096))
O_R = _curve((0.13e-6, 1.15e-6), (1e-11, 3.3e-11), (4096,))
G = _curve((0.20e-6, 0.80e-6, 1.33e-6), (2e-10, 1.8e-10, 3e-11), (304, 4096))
RTT = _curve((0.45e-6, 0.75e-6, 1.60e-6), (5e-10, 1.6e-10, 3.3e-11), (304, 4096))
FLAT = (_curve((0.13e-6,), (1e-11,), ()), _curve((1.1e-6,), (3e-11,), ()),
        _curve((0.2e-6,), (3e-11,), ()), _curve((0.5e-6,), (4e-11,), ()))
G_JUMP = (1.33e-6 / (0.80e-6 + 1.8e-10 * (4096 - 304))) - 1  # -10.3 %


def _draw(curves: tuple[Curve, ...], noise: float, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [synthetic_steps(SIZES, a, b, k, noise, rng) for a, b, k in curves]


def _fit(curves: tuple[Curve, ...], noise: float, seed: int):  # type: ignore[no-untyped-def]
    errors = [np.full(SIZES.size, noise or 0.01)] * len(curves)
    return fit_shared_steps(SIZES, _draw(curves, noise, seed), errors)


def test_exact_curves_give_their_breaks_and_jumps() -> None:
    fit = fit_shared_steps(SIZES, _draw((O_S, O_R, G, RTT), 0.0, 0), [None] * 4)
    assert fit.breakpoints == (304, 4096)
    g = fit.fits[2]
    assert g.jumps()[1] == pytest.approx(G_JUMP, rel=1e-6)
    np.testing.assert_allclose(g(SIZES), synthetic_steps(SIZES, *G, 0.0,
                                                         np.random.default_rng(0)), rtol=1e-6)
    # o_r has a piece boundary at 304 B but no step there
    assert fit.fits[1].stepped() == (False, True)


@pytest.mark.parametrize("noise", [0.02, 0.10])
def test_no_break_is_invented(noise: float) -> None:
    assert sum(_fit(FLAT, noise, seed).breakpoints == () for seed in SEEDS) >= 28


def test_the_eager_limit_is_found_in_every_function_that_steps_there() -> None:
    """At 2 % noise: 4 KiB in all four, g's -10 % step included, in nearly every draw."""
    stepped = np.zeros(4, int)
    for seed in SEEDS:
        fit = _fit((O_S, O_R, G, RTT), 0.02, seed)
        if 4096 in fit.breakpoints:
            at = fit.breakpoints.index(4096)
            stepped += [f.stepped()[at] for f in fit.fits]
    assert stepped.min() >= 28, stepped


def test_sharing_finds_a_small_step_one_function_alone_misses() -> None:
    """g's -10 % step, fitted alone, is found less often than with the others beside it."""
    alone = shared = 0
    for seed in SEEDS:
        values = _draw((O_S, O_R, G, RTT), 0.02, seed)
        errors = [np.full(SIZES.size, 0.02)] * 4
        g = fit_steps(SIZES, values[2], rel_errors=errors[2])
        alone += 4096 in [b for b, s in zip(g.breakpoints, g.stepped(), strict=True) if s]
        fit = fit_shared_steps(SIZES, values, errors)
        shared += 4096 in fit.breakpoints and fit.fits[2].stepped()[fit.breakpoints.index(4096)]
    assert shared >= 28
    assert alone < shared


def test_a_function_without_the_step_is_said_not_to_step() -> None:
    """Only o_r steps at 4 KiB: the shared break is found, and g is not said to step there."""
    curves = (FLAT[0], O_R, FLAT[2], FLAT[3])
    found = quiet = 0
    for seed in SEEDS:
        fit = _fit(curves, 0.02, seed)
        if 4096 in fit.breakpoints:
            found += 1
            quiet += not fit.fits[2].stepped()[fit.breakpoints.index(4096)]
    assert found >= 29
    assert quiet >= 26  # a 95 % interval: about 1 in 20 covers no 0 by chance


def test_the_jump_interval_covers_the_true_jump() -> None:
    covered = total = 0
    for seed in SEEDS:
        fit = _fit((O_S, O_R, G, RTT), 0.02, seed)
        if fit.breakpoints == (304, 4096):
            total += 1
            g = fit.fits[2]
            covered += g.jump_low[1] <= G_JUMP <= g.jump_high[1]
    assert total >= 25
    assert covered >= 0.8 * total


def test_at_10_percent_the_large_step_is_still_found() -> None:
    assert sum(4096 in _fit((O_S, O_R, G, RTT), 0.10, seed).breakpoints
               for seed in SEEDS) >= 28


def test_a_step_between_two_sizes_is_a_break_not_a_steep_piece() -> None:
    """On a 1.5x grid the step between 3072 and 4096 B could pass for a two-size piece from 3072
    to 4096 B; pieces of 3 or more sizes do not allow that."""
    sizes = np.array(sorted({1 << k for k in range(21)} | {3 << k for k in range(20)}), float)
    rng = np.random.default_rng(1)
    values = [synthetic_steps(sizes, *O_R, 0.0, rng), synthetic_steps(sizes, *G, 0.0, rng)]
    fit = fit_shared_steps(sizes, values, [None, None])
    assert 4096 in fit.breakpoints
    assert 6144 not in fit.breakpoints


def test_the_report_says_where_a_function_does_not_step() -> None:
    fit = fit_shared_steps(SIZES, _draw((O_S, O_R, G, RTT), 0.0, 0), [None] * 4)
    text = _function("o_r", fit.fits[1])
    assert "no step at the transport's break 304 B" in text
    assert "at 4096 B" in text
    assert "[95 %" in text


def test_bad_input_says_what_is_wrong() -> None:
    with pytest.raises(AnalysisError, match="positive finite"):
        fit_shared_steps(SIZES, [-np.ones(SIZES.size)], [None])
    with pytest.raises(AnalysisError, match="one error array"):
        fit_shared_steps(SIZES, [np.ones(SIZES.size)], [])
    with pytest.raises(AnalysisError, match="distinct sizes"):
        fit_shared_steps(SIZES[:4], [np.ones(4)], [None])


def test_the_steps_table_names_each_switch_and_who_steps() -> None:
    values = _draw((O_S, O_R, G, RTT), 0.0, 0)
    model = fit_plogp_model(SIZES, values[3], values[0], values[1], values[2])
    table = _steps_table(model, SIZES.astype(np.int64), "Open MPI")
    assert table.frame["to_bytes"].tolist() == [304, 4096]
    assert table.frame["from_bytes"].tolist() == [256, 3444]
    shown = table.shown
    assert isinstance(shown, pd.DataFrame)
    assert shown["o_r"].tolist()[0] == "no step"
    assert shown["g"].tolist()[1].startswith("-10%")
    assert bool(table.frame["g_steps"].iloc[1])
