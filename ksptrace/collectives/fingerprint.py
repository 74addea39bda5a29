"""Which algorithm a library's automatic choice ran, told by the result of a probe (issue 54).

MPICH's allreduce algorithms add in the same order at small P (every one pairs neighbours
first), so a sum of numbers cannot tell them apart; the order of the *operands* can. The probe
reduces quiet NaNs whose payloads name the rank they came from: adding two NaNs returns one
operand's payload (on x86-64 the first), so the payloads each rank ends with record
which operand every step of the algorithm put first. A probe's fingerprint is one digest of
those payloads per rank.

The default call and each forced algorithm reduce the same probe, at the same element count,
type and operation as the timed calls (so the library selects as it did for them); the default
ran the forced algorithm whose fingerprint it shares. Two algorithms can share one (MPICH
4.0.2's ``smp``, a reduce and a broadcast on one node, matches ``reduce_scatter_allgather`` at
P = 2 and 4 from 512 elements): that is reported as ambiguous, never settled by a guess. A sum of
bytes (sizes not a multiple of 8 B, the benchmark's element type) shows no order at all.

Pure: numpy arrays in, names and sentences out; ``mpich_default`` runs the calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

QUIET_NAN = np.uint64(0x7FF8000000000000)
PAYLOAD_MASK = np.uint64(0xFFFFFFFF)

NOT_ALGORITHMS: Mapping[str, str] = {
    "auto": "MPICH's automatic choice itself",
    "nb": "the non-blocking allreduce's own choice, whose fingerprint is that of the algorithm "
          "it picks (recursive doubling or reduce-scatter-allgather as schedules)",
}
"""Values of MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM that name a route, not a reduction order: not
candidates (``nb`` would otherwise tie with every algorithm it delegates to)."""


def nan_payloads(count: int, rank: int) -> np.ndarray:
    """``count`` quiet NaNs (float64) whose payload is ``rank + 1``."""
    bits = np.full(count, QUIET_NAN | np.uint64(rank + 1), dtype=np.uint64)
    return bits.view(np.float64)


def digest(result: np.ndarray) -> str:
    """The payloads a rank's reduced probe holds, as a short digest (64 bits, hex)."""
    payloads = np.ascontiguousarray(result).view(np.uint64) & PAYLOAD_MASK
    return hashlib.sha1(payloads.tobytes()).hexdigest()[:16]


@dataclass(frozen=True)
class Verdict:
    """What one message size's default call ran, by fingerprint."""

    size: int
    ran: str | None
    """The one forced algorithm with the default's fingerprint; None when not exactly one."""
    why_not: str = ""


def judge(size: int, default: Sequence[str] | None,
          forced: Sequence[tuple[str, Sequence[str]]], device_path: bool) -> Verdict:
    """Compare the default's fingerprint (one digest per rank; None: not probed, bytes) with
    each forced algorithm's at one size, each named by the algorithm that ran when forced (a
    forced algorithm that falls back to another there shares that one's name)."""
    if default is None:
        return Verdict(size, None, "a sum of bytes shows no order (the probe needs float64)")
    same = sorted({name for name, fp in forced if tuple(fp) == tuple(default)})
    if len(same) == 1:
        return Verdict(size, same[0])
    if same:
        return Verdict(size, None, "ambiguous between " + " and ".join(same)
                       + " (the same operands in the same order)")
    if device_path:
        return Verdict(size, None, "the ch4 device's own allreduce ran (device collectives "
                       "enabled), and its result matches no MPIR algorithm")
    return Verdict(size, None, "its result matches no forced MPIR algorithm")


def summarise(verdicts: Sequence[Verdict]) -> tuple[dict[int, str] | None, str]:
    """``algorithm_ran`` (the sizes told apart; None if none) and one note for the rest, its
    sizes grouped by reason."""
    ran = {v.size: v.ran for v in verdicts if v.ran is not None}
    reasons: dict[str, list[int]] = {}
    for v in verdicts:
        if v.ran is None:
            reasons.setdefault(v.why_not, []).append(v.size)
    parts = [f"at {', '.join(map(str, sizes))} B: {why}" for why, sizes in reasons.items()]
    note = ("MPICH's default, told by NaN-payload fingerprint against each forced algorithm, "
            "is not known " + "; ".join(parts)) if parts else ""
    return ran or None, note
