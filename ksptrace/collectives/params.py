"""The parameters of a collectives run, declared once: CLI flags, campaign keys, attributes."""

from __future__ import annotations

import re

from ksptrace.errors import UsageError
from ksptrace.params import Param

OPERATIONS: tuple[str, ...] = ("allreduce", "iallreduce", "iallreduce_overlap", "bcast",
                               "reduce", "gather", "allgather", "barrier", "plogp")
"""Every operation, in the order the CLI lists them (``plogp``: PLogP's point-to-point
parameters between two ranks, ksptrace.collectives.plogp)."""
POINT_TO_POINT = frozenset({"plogp"})
"""Operations that time messages between ranks 0 and 1, not a collective: no algorithm, P = 2."""
DEFAULT_ALGORITHM = "default"
TIMING_MODES = ("per-call", "back-to-back")
"""How a repetition is timed: one barrier-separated call, or --calls calls back to back."""
BACK_TO_BACK_OPERATIONS = frozenset({"allreduce"})
"""Operations the C kernel times back to back."""

COLLECTIVE_PARAMS: tuple[Param, ...] = (
    Param("op", str, "allreduce", "the collective", choices=OPERATIONS),
    Param("algorithm", str, DEFAULT_ALGORITHM, "algorithm to force: number or name "
          "(--list-algorithms); default lets the library choose"),
    Param("segment_bytes", int, 0, "segment size of a segmented Open MPI algorithm (0: none)",
          minimum=0, maximum=1 << 30),
    Param("min_bytes", str, "1", "smallest message size per rank (bytes; K, M suffixes)"),
    Param("max_bytes", str, "1M", "largest message size per rank; sizes are the powers of two "
          "from min to max (--per-octave sets more)"),
    Param("per_octave", int, 0, "message sizes per doubling (2^(k/n) rounded; 1: powers of "
          "two); 0: 4 for plogp, whose protocol steps lie between powers of two, else 1",
          minimum=0, maximum=16),
    Param("repetitions", int, 20, "timed calls per message size", minimum=1,
          maximum=1_000_000),
    Param("warmup", int, 3, "untimed (but checked) calls before them", minimum=0,
          maximum=1_000_000),
    Param("compute_us", float, 100.0, "iallreduce_overlap: local compute per call (us)",
          minimum=0, maximum=1e6),
    Param("test_calls", int, 0, "iallreduce_overlap: MPI_Test calls spread through the "
          "compute (progress for libnbc)", minimum=0, maximum=1_000_000),
    Param("mode", str, "per-call", "per-call: each call between barriers (what a Krylov "
          "iteration pays); back-to-back: --calls calls between two clock reads, in C (the "
          "standard benchmarks' figure; allreduce)", choices=TIMING_MODES),
    Param("calls", int, 100, "back-to-back: calls per repetition", minimum=1,
          maximum=100_000_000),
)


def parse_bytes(text: str, flag: str) -> int:
    """``64``, ``4K``, ``1M``, ``1MiB`` -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*", str(text))
    if m is None:
        raise UsageError(f"{flag} must be a byte count such as 8, 4K or 1M, got {text!r}")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def per_octave(operation: str, value: int) -> int:
    """Sizes per doubling: ``value``, or where it is 0 the operation's default (4 for PLogP: on
    powers of two alone, Open MPI's eager limit near 4040 B and its fast boxes' near 2 KiB fall
    between two sizes, and g's fall at the one cancels against its rise below it)."""
    return value or (4 if operation in POINT_TO_POINT else 1)


def message_sizes(operation: str, low: int, high: int, per_doubling: int = 1
                  ) -> tuple[int, ...]:
    """2^(k/n) rounded to whole bytes (n = ``per_doubling``; 1: the powers of two), from
    ``low`` to ``high``, without repeats; a barrier has the one size 0."""
    if operation == "barrier":
        return (0,)
    if low < 1 or high < low:
        raise UsageError(f"need 1 <= --min-bytes <= --max-bytes, got {low} and {high}")
    if per_doubling < 1:
        raise UsageError(f"--per-octave must be >= 1 here, got {per_doubling}")
    top = per_doubling * high.bit_length()
    sizes = tuple(sorted({m for m in (round(2 ** (k / per_doubling)) for k in range(top + 1))
                          if low <= m <= high}))
    if not sizes:
        raise UsageError(f"no message size of the form 2^(k/{per_doubling}) between {low} and "
                         f"{high} bytes")
    return sizes
