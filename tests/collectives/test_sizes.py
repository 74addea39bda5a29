"""Message sizes per doubling (issue 54): powers of two stay the collectives' default, PLogP
measures 4 per doubling (Open MPI's eager limit near 4040 B and its fast boxes' near 2 KiB lie
between powers of two), and a bad request says what is wrong."""

from __future__ import annotations

import pytest

from ksptrace.collectives.params import message_sizes, per_octave
from ksptrace.errors import UsageError


def test_one_per_doubling_is_the_powers_of_two() -> None:
    assert message_sizes("allreduce", 1, 1 << 20) == tuple(1 << k for k in range(21))
    assert message_sizes("allreduce", 3, 100) == (4, 8, 16, 32, 64)
    assert message_sizes("barrier", 1, 1 << 20, 4) == (0,)


def test_four_per_doubling_holds_every_power_and_the_sizes_between() -> None:
    sizes = message_sizes("plogp", 1, 1 << 20, 4)
    assert len(sizes) == 76
    assert sizes == tuple(sorted(set(sizes)))
    assert {1 << k for k in range(21)} <= set(sizes)
    assert tuple(m for m in sizes if 2048 < m <= 4096) == (2435, 2896, 3444, 4096)
    assert message_sizes("plogp", 3000, 5000, 4) == (3444, 4096, 4871)


def test_the_default_is_the_operations() -> None:
    assert per_octave("plogp", 0) == 4
    assert per_octave("allreduce", 0) == 1
    assert per_octave("allreduce", 3) == 3


def test_bad_requests_say_what_is_wrong() -> None:
    with pytest.raises(UsageError, match="no message size"):
        message_sizes("allreduce", 5, 7)
    with pytest.raises(UsageError, match="--min-bytes"):
        message_sizes("allreduce", 8, 4)
    with pytest.raises(UsageError, match="--per-octave"):
        message_sizes("allreduce", 1, 8, 0)
