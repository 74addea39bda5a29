"""What MPICH's default allreduce ran, per message size, found at run time (issue 54).

MPICH decides in two places: with ``MPIR_CVAR_DEVICE_COLLECTIVES`` at ``percoll`` (its default)
and ``MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE`` true, MPI_Allreduce goes to the ch4 device, whose
own tuning (JSON) may call an MPIR algorithm or a device one; with ``none`` it goes to MPIR's
automatic choice (``MPIR_Allreduce_intra_auto``, its JSON table). Reproducing both tables would
copy MPICH's internals, so ksptrace asks the result instead: after the timed calls, every rank
reduces a NaN-payload probe (:mod:`ksptrace.collectives.fingerprint`) with the default once per
size, then with each MPIR algorithm forced *in the running job*: MPICH reads these control
variables at every call, so they are written through MPI_T (``MPIR_CVAR_DEVICE_COLLECTIVES`` =
none, ``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM`` = the algorithm) and restored after. The same
library, communicator, element count, type and operation as the timed calls, so the selection
is the one they saw.

Collective: every rank calls it; the writes are agreed on by all ranks before any probe runs
(ranks that forced different algorithms would deadlock).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ksptrace.collectives import fingerprint, mpit
from ksptrace.collectives.algorithms import MPICH_ALGORITHMS, cvar_of
from ksptrace.collectives.fallbacks import mpich_allreduce
from ksptrace.collectives.mpich import parse_names

DEVICE = "MPIR_CVAR_DEVICE_COLLECTIVES"
ALLREDUCE_DEVICE = "MPIR_CVAR_ALLREDUCE_DEVICE_COLLECTIVE"
DEVICE_MODES = ("all", "none", "percoll")


def _probe(comm: Any, count: int) -> tuple[str, ...]:
    from mpi4py import MPI

    x = fingerprint.nan_payloads(count, comm.Get_rank())
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    return tuple(comm.allgather(fingerprint.digest(y)))


def _names(variable: str, known: tuple[str, ...]) -> tuple[str, ...]:
    text = mpit.descriptions([variable]).get(variable)
    return parse_names(text, known) if text else ()


def default_allreduce_ran(comm: Any, sizes: Sequence[int]) -> tuple[dict[int, str] | None, str]:
    """Message size -> the MPIR algorithm whose fingerprint the default's matches, and a note
    for the sizes where none or several do (or why nothing could be probed)."""
    with mpit.held_open():
        return _probe_all(comm, sizes)


def _probe_all(comm: Any, sizes: Sequence[int]) -> tuple[dict[int, str] | None, str]:
    variable = cvar_of("allreduce")
    names = _names(variable, MPICH_ALGORITHMS["allreduce"])
    modes = _names(DEVICE, DEVICE_MODES)
    if "none" not in modes or not names:
        return None, ("what ran is not known: this MPICH does not describe "
                      f"{variable} and {DEVICE} through MPI_T")
    held = mpit.read_int_cvars([DEVICE, ALLREDUCE_DEVICE])
    mode = held[DEVICE]
    mode_name = modes[mode] if mode is not None and 0 <= mode < len(modes) else None
    device_path = mode_name == "all" or (mode_name == "percoll" and held[ALLREDUCE_DEVICE] != 0)
    counts = {int(m): int(m) // 8 for m in sizes if m % 8 == 0}
    default = {m: _probe(comm, c) for m, c in counts.items()}
    forced: dict[str, dict[int, tuple[str, ...]]] = {}
    for index, name in enumerate(names):
        if name in fingerprint.NOT_ALGORITHMS:
            continue
        with mpit.written_int_cvars({DEVICE: modes.index("none"), variable: index}) as before:
            from mpi4py import MPI

            written = all(v is not None for v in before.values())
            if not comm.allreduce(int(written), op=MPI.MIN):
                return None, (f"what ran is not known: MPICH refused to set {variable} through "
                              "MPI_T at run time, so no forced algorithm could be probed")
            forced[name] = {m: _probe(comm, c) for m, c in counts.items()}
    nprocs = comm.Get_size()
    verdicts = [fingerprint.judge(
        int(m), default.get(int(m)),
        [(mpich_allreduce(n, counts[int(m)], nprocs), fp[int(m)]) for n, fp in forced.items()
         if int(m) in fp], device_path) for m in sizes]
    return fingerprint.summarise(verdicts)
