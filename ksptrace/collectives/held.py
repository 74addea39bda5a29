"""What the library held and what ran: the forcing read back (MPI_T) and the algorithm per size.

The checks :func:`ksptrace.collectives.bench.execute` runs around the measurement: that the
library holds the forced algorithm (a refused value makes it keep its default), and which
algorithm ran at each size (by the library's fallback rules, or Open MPI's fixed decision).
"""

from __future__ import annotations

import os
from typing import Protocol

from ksptrace.collectives import fallbacks, ompi_fixed
from ksptrace.collectives.algorithms import OMPI_COLLECTIVE, Forcing
from ksptrace.collectives.mpit import read_int_cvars
from ksptrace.errors import KsptraceError, UsageError


class BenchSettings(Protocol):
    """What these checks read of a run's settings (:class:`ksptrace.collectives.bench.
    BenchSettings`; a protocol, so that bench imports this module and not the reverse)."""

    @property
    def operation(self) -> str: ...
    @property
    def sizes(self) -> tuple[int, ...]: ...
    @property
    def forcing(self) -> Forcing: ...

def held_forcing(forcing: Forcing) -> tuple[dict[str, int | None], KsptraceError | None]:
    """The forcing variables as the library holds them (MPI_T), and an error when they are not
    what the run forced (Open MPI keeps its default for a value it refuses; MPICH refuses an
    unknown name in MPI_Init itself, and holds a known one as its index in its own list)."""
    if forcing.library == "mpich":
        return _held_mpich(forcing)
    coll = OMPI_COLLECTIVE.get(forcing.operation)
    if forcing.library != "openmpi" or coll is None:
        return {}, None
    names: dict[str, int | None] = {"coll_tuned_use_dynamic_rules": None,
                                    f"coll_tuned_{coll}_algorithm": None}
    names.update({k.removeprefix("OMPI_MCA_"): int(v) for k, v in forcing.env})
    held = read_int_cvars(names)
    for name, wanted in names.items():
        if wanted is not None and held[name] is not None and held[name] != wanted:
            return held, UsageError(
                f"Open MPI holds {name} = {held[name]}, not {wanted}: it rejected the forced "
                f"{forcing.operation} algorithm {forcing.name}; see ompi_info --param coll "
                "tuned --level 9")
    return held, None


def _held_mpich(forcing: Forcing) -> tuple[dict[str, int | None], KsptraceError | None]:
    if not forcing.forced:
        return {}, None
    variable = next(k for k, _ in forcing.env if k.endswith("_ALGORITHM"))
    held = read_int_cvars([variable, "MPIR_CVAR_DEVICE_COLLECTIVES"])
    if held[variable] is not None and held[variable] != forcing.algorithm:
        return held, UsageError(
            f"MPICH holds {variable} = {held[variable]}, not {forcing.algorithm} "
            f"({forcing.name}): the run would not measure what it names; see mpivars")
    return held, None


def what_ran(s: BenchSettings, nprocs: int, held: dict[str, int | None], library: str,
             n_nodes: int = 1) -> tuple[dict[int, str] | None, str]:
    """Message size -> the algorithm that ran (forced: by the library's fallback rules; not
    forced: by Open MPI's fixed decision, where it applies), or None and why it is unknown.
    MPICH's unforced allreduce is found by fingerprint in the running job instead
    (:func:`probes_default`, :mod:`ksptrace.collectives.mpich_default`)."""
    if s.forcing.forced:
        return fallbacks.ran_per_size(s.forcing.library, s.operation, s.forcing.name, s.sizes,
                                      nprocs, s.forcing.segment_bytes), ""
    if s.operation != "allreduce" or nprocs < 2:
        return None, ""
    if s.forcing.library == "mpich":
        return None, ("what ran is not known: MPICH's automatic choice (device collectives, "
                      "JSON tuning files) is not reproduced by ksptrace")
    if s.forcing.library != "openmpi":
        return None, ""
    if held.get("coll_tuned_use_dynamic_rules") != 0 or os.environ.get("OMPI_MCA_coll"):  # noqa: SIM112
        return None, ("what ran is not known: Open MPI's dynamic rules or component selection "
                      "are set in the environment, so its fixed decision may not apply")
    why = ompi_fixed.fixed_applies(library, n_nodes)
    if why is not None:
        return None, f"what ran is not known: {why}"
    return ompi_fixed.default_allreduce_ran(s.sizes, nprocs), ""


def probes_default(s: BenchSettings, nprocs: int) -> bool:
    """Whether what ran is found by fingerprint at run time: MPICH's unforced allreduce."""
    return (s.forcing.library == "mpich" and not s.forcing.forced
            and s.operation == "allreduce" and nprocs > 1)
