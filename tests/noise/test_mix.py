"""Noise specs joined by ``;``: a different noise per rank (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest

from ksptrace.errors import UsageError
from ksptrace.noise.draw import detours, rank_detours
from ksptrace.noise.spec import MAX_PARTS, canonical, parse

MIX = "fixed:value=200us,ranks=1; uniform:low=0,high=150us,p=0.5,ranks=0"


def test_a_mix_parses_to_its_parts_and_round_trips() -> None:
    spec = parse(MIX)
    first, second = spec.parts
    assert (first.dist, first.ranks) == ("fixed", ((1, 1),))
    assert first.param("value") == pytest.approx(200e-6)
    assert (second.dist, second.ranks, second.p) == ("uniform", ((0, 0),), 0.5)
    assert spec.active
    text = spec.text()
    assert text == ("fixed:value=200us,p=1,per=rank,seed=0,ranks=1; "
                    "uniform:low=0,high=150us,p=0.5,per=rank,seed=0,ranks=0")
    assert parse(text) == spec
    assert canonical(MIX) == text
    assert parse("fixed:value=1us").parts == (parse("fixed:value=1us"),)


def test_each_rank_draws_the_sum_of_the_specs_that_name_it() -> None:
    spec = parse(MIX)
    slow = rank_detours(spec, 1, 0, 500)
    fast = rank_detours(spec, 0, 0, 500)
    assert np.array_equal(slow, np.full(500, spec.parts[0].param("value")))
    assert 0.4 < np.mean(fast > 0) < 0.6
    assert fast.max() < 150e-6
    both = parse("fixed:value=10us; exponential:scale=5us,p=0.5")
    alone = detours(parse("exponential:scale=5us,p=0.5"), 3, 400, part=1)
    assert np.array_equal(rank_detours(both, 3, 0, 400), both.parts[0].param("value") + alone)


def test_one_spec_draws_what_it_drew_before_and_parts_have_their_own_streams() -> None:
    one = parse("exponential:scale=5us,p=0.5,seed=7")
    assert np.array_equal(rank_detours(one, 2, 0, 300), detours(one, 2, 300))
    twice = parse("exponential:scale=5us,p=0.5,seed=7; exponential:scale=5us,p=0.5,seed=7")
    a, b = (detours(part, 2, 300, part=i) for i, part in enumerate(twice.parts))
    assert np.array_equal(a, detours(one, 2, 300))
    assert not np.array_equal(a, b)  # the same seed, another stream


def test_a_campaign_repetition_reseeds_every_part() -> None:
    again = parse("fixed:value=1us,seed=2; exponential:scale=5us,seed=5").reseeded(3)
    assert [part.seed for part in again.parts] == [5, 8]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("fixed:value=1us;", "empty spec between its ';'"),
     ("none; fixed:value=1us", "'none' cannot be one of several specs"),
     ("; ".join(["fixed:value=1us"] * (MAX_PARTS + 1)), f"at most {MAX_PARTS}"),
     ("fixed:value=1us; lorentz:scale=1us", "unknown noise distribution 'lorentz'"),
     ("fixed:value=1us; fixed:value=20s", "longer than")],
)
def test_a_bad_mix_is_one_line(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as err:
        canonical(text)  # what a run and a campaign check
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)
