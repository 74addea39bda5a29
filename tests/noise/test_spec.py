"""Noise specs: parsing, units, validation, canonical text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.noise.spec import parse


def test_parse_units_and_defaults() -> None:
    s = parse("exponential:scale=20us")
    assert s.dist == "exponential"
    assert s.param("scale") == pytest.approx(20e-6)
    assert (s.p, s.per, s.seed) == (1.0, "rank", 0)
    s = parse("lognormal: median=1.5ms, sigma=2, p=0.25, per=node, seed=7")
    assert s.param("median") == pytest.approx(1.5e-3)
    assert s.param("sigma") == 2.0
    assert (s.p, s.per, s.seed) == (0.25, "node", 7)
    assert parse("uniform:low=0,high=100us").param("high") == pytest.approx(1e-4)
    assert parse("fixed:value=2e-5").param("value") == pytest.approx(2e-5)
    assert not parse("none").active
    assert not parse("fixed:value=1us,p=0").active


@pytest.mark.parametrize(
    "text",
    ["none", "fixed:value=50us,p=0.1", "exponential:scale=20us,p=0.5,per=node,seed=3",
     "lognormal:median=10us,sigma=1.5,p=0.2", "pareto:scale=10us,shape=1.5,p=0.05",
     "uniform:low=1us,high=100us"],
)
def test_canonical_text_round_trips(text: str) -> None:
    s = parse(text)
    assert parse(s.text()) == s


def test_mean_detour() -> None:
    assert parse("fixed:value=10us,p=0.5").mean_detour() == pytest.approx(5e-6)
    assert parse("lognormal:median=1ms,sigma=1").mean_detour() == pytest.approx(
        1e-3 * math.exp(0.5))
    assert parse("pareto:scale=1ms,shape=3").mean_detour() == pytest.approx(1.5e-3)
    assert math.isinf(parse("pareto:scale=1ms,shape=1").mean_detour())


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("gaussian:scale=1us", "unknown noise distribution 'gaussian'"),
        ("exponential", "exponential needs scale"),
        ("exponential:scale=-1us", "scale must be >= 0"),
        ("exponential:scale=0", "scale must be > 0"),
        ("exponential:scale=1us,p=1.5", "must be in [0, 1]"),
        ("exponential:scale=1us,p=-0.1", "must be in [0, 1]"),
        ("exponential:scale=1us,per=socket", "per must be rank or node"),
        ("exponential:scale=1us,seed=-3", "seed must be an integer from 0 to 9223372036854775807"),
        ("exponential:scale=1parsec", "unknown unit"),
        ("exponential:scale=abc", "is not a number"),
        ("exponential:scale=1us,shape=2", "unknown parameter 'shape'"),
        ("exponential:scale=1us,scale=2us", "given twice"),
        ("lognormal:median=1us,sigma=0", "sigma must be > 0"),
        ("pareto:scale=1us,shape=-1", "shape must be >= 0"),
        ("uniform:low=5us,high=1us", "high must be >= low"),
        ("fixed:value=50", "did you forget a unit"),
        ("fixed:value=nan", "is not a number"),
        ("exponential:scale", "is not key=value"),
        ("", "noise spec is empty"),
    ],
)
def test_bad_specs_are_one_line(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        parse(text)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_ranks_limit_the_detours_to_some_ranks() -> None:
    from ksptrace.noise.draw import all_detours

    spec = parse("exponential:scale=30us,p=0.5,ranks=0+2-3,seed=4")
    assert spec.ranks == ((0, 0), (2, 3))  # intervals, never one number per rank
    assert parse(spec.text()) == spec
    assert spec.text().endswith(",ranks=0+2+3")
    hit = (all_detours(spec, np.zeros(5, np.int64), 200) > 0).sum(axis=1)
    assert hit[1] == 0
    assert hit[4] == 0
    assert (hit[[0, 2, 3]] > 60).all()
    assert parse("exponential:scale=30us").ranks is None  # every rank, as before
    with pytest.raises(UsageError, match="has 3-1, which runs backwards; write 1-3"):
        parse("fixed:value=1us,ranks=3-1")
    with pytest.raises(UsageError, match="is not a rank list"):
        parse("fixed:value=1us,ranks=a")


@pytest.mark.parametrize("digits", [20, 4000, 4400])
def test_a_huge_seed_is_one_short_line(digits: int) -> None:
    """Issue 66: a seed of 4,300+ digits raised Python's ValueError (int string conversion)."""
    with pytest.raises(UsageError) as info:
        parse("exponential:scale=20us,p=0.5,seed=" + "9" * digits)
    message = str(info.value)
    assert "\n" not in message
    assert len(message) < 400
    assert "seed must be an integer from 0 to 9223372036854775807" in message


def test_the_largest_seed_parses_back_and_a_repetition_past_it_is_refused() -> None:
    from ksptrace.noise.spec import MAX_SEED

    spec = parse(f"exponential:scale=20us,seed={MAX_SEED}")
    assert parse(spec.text()) == spec
    assert spec.reseeded(0) == spec
    with pytest.raises(UsageError, match="a seed plus the repetition 1 exceeds"):
        spec.reseeded(1)


def test_a_lognormal_of_huge_sigma_has_an_infinite_mean_not_an_overflow() -> None:
    """Issue 66: sigma=40 raised OverflowError in mean_detour (exp(800))."""
    spec = parse("lognormal:median=10us,sigma=40,p=0.2")
    assert math.isinf(spec.mean_detour())
    assert spec.run_problem() is not None
    assert parse("lognormal:median=10us,sigma=37").mean_detour() == pytest.approx(
        10e-6 * math.exp(37 ** 2 / 2))
