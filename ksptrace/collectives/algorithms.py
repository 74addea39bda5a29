"""Which algorithm an MPI library uses for a collective, and the environment that forces it.

Open MPI's ``tuned`` component takes ``OMPI_MCA_coll_tuned_use_dynamic_rules=1`` and
``OMPI_MCA_coll_tuned_<collective>_algorithm=N`` (plus ``..._algorithm_segmentsize`` for the
segmented algorithms); the numbers and names come from ``ompi_info --param coll tuned --level
9``. MPICH takes ``MPIR_CVAR_<COLLECTIVE>_INTRA_ALGORITHM=<name>`` (with device collectives
off, so that the choice reaches the algorithm). Both read the variables in ``MPI_Init``, so a
rank sets them in its own environment before mpi4py initialises MPI: forcing works under any
launcher. Any other library runs with its defaults, and the run says so.

Everything here is pure except :func:`ompi_catalogue`, which runs ``ompi_info``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from ksptrace.cachedir import load_text, store_text
from ksptrace.errors import AnalysisError, EnvironmentProblem, UsageError
from ksptrace.trace.ompi import parse_ompi_algorithms

DEFAULT = "default"
"""The algorithm name of a run that forces nothing (the library decides)."""

OMPI_COLLECTIVE: Mapping[str, str | None] = {
    "allreduce": "allreduce", "iallreduce": None, "iallreduce_overlap": None,
    "bcast": "bcast", "reduce": "reduce", "gather": "gather", "allgather": "allgather",
    "barrier": "barrier", "plogp": None,
}
"""Operation -> the tuned component's collective (None: non-blocking, not in tuned: libnbc;
or point to point)."""

OMPI_SEGMENTED: Mapping[str, frozenset[str]] = {
    "allreduce": frozenset({"segmented_ring"}),
    "bcast": frozenset({"chain", "pipeline", "split_binary_tree", "binary_tree", "binomial",
                        "knomial"}),
    "reduce": frozenset({"chain", "pipeline", "binary", "binomial", "in-order_binary"}),
}
"""Open MPI tuned algorithms that cut the message into segments of
``coll_tuned_<collective>_algorithm_segmentsize`` bytes (coll_tuned_decision_fixed.c, 4.x)."""

MPICH_ALGORITHMS: Mapping[str, tuple[str, ...]] = {
    "allreduce": ("auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather",
                  "tree", "recexch", "ring", "k_reduce_scatter_allgather"),
    "iallreduce": ("auto", "sched_naive", "sched_smp", "sched_recursive_doubling",
                   "sched_reduce_scatter_allgather", "gentran_recexch_single_buffer",
                   "gentran_recexch_multiple_buffer", "gentran_tree", "gentran_ring",
                   "gentran_recexch_reduce_scatter_recexch_allgatherv"),
    "bcast": ("auto", "binomial", "nb", "smp", "scatter_recursive_doubling_allgather",
              "scatter_ring_allgather", "pipelined_tree", "tree"),
    "reduce": ("auto", "binomial", "nb", "smp", "reduce_scatter_gather"),
    "gather": ("auto", "binomial", "nb"),
    "allgather": ("auto", "brucks", "nb", "recursive_doubling", "ring", "recexch_doubling",
                  "recexch_halving"),
    "barrier": ("auto", "nb", "smp", "dissemination", "k_dissemination", "recexch"),
}
"""MPICH 4.x algorithm names of ``MPIR_CVAR_<COLL>_INTRA_ALGORITHM`` (its cvar list); the
overlapped Iallreduce uses the Iallreduce variable."""


@dataclass(frozen=True)
class Forcing:
    """The algorithm one run forces, and the environment variables that do it."""

    library: str
    """'openmpi', 'mpich' or 'unknown'."""
    operation: str
    algorithm: int
    """Open MPI's algorithm number; for MPICH the value of its algorithm variable; 0 = default."""
    name: str
    segment_bytes: int = 0
    env: tuple[tuple[str, str], ...] = ()
    note: str = ""
    """Why nothing is forced, when that is so (unknown library, non-blocking in Open MPI)."""

    @property
    def forced(self) -> bool:
        return bool(self.env)


def default_forcing(library: str, operation: str, note: str = "") -> Forcing:
    return Forcing(library, operation, 0, DEFAULT, note=note)


def _known(catalogue: Mapping[int, str]) -> str:
    return ", ".join(f"{n} {name}" for n, name in sorted(catalogue.items()))


def openmpi_forcing(operation: str, algorithm: int | str, catalogue: Mapping[int, str],
                    segment_bytes: int = 0) -> Forcing:
    """The ``OMPI_MCA_coll_tuned_*`` variables that force ``algorithm`` (number or name)."""
    coll = OMPI_COLLECTIVE[operation]
    if coll is None:
        if algorithm in (0, DEFAULT, "0"):
            return default_forcing("openmpi", operation,
                                   "non-blocking collectives come from libnbc, not tuned")
        raise UsageError(f"Open MPI cannot force an algorithm for {operation} (libnbc has no "
                         "algorithm choice); leave --algorithm out")
    by_name = {name: n for n, name in catalogue.items()}
    by_name[DEFAULT] = 0
    number = by_name.get(str(algorithm)) if not str(algorithm).isdigit() else int(algorithm)
    if number is None or number not in catalogue:
        raise UsageError(f"unknown Open MPI {coll} algorithm {algorithm!r}; valid: "
                         f"{_known(catalogue)} (ompi_info --param coll tuned --level 9)")
    name = catalogue[number]
    if number == 0:
        if segment_bytes:
            raise UsageError("--segment-bytes needs a forced algorithm")
        return default_forcing("openmpi", operation)
    if segment_bytes and name not in OMPI_SEGMENTED.get(coll, frozenset()):
        takes = ", ".join(sorted(OMPI_SEGMENTED.get(coll, frozenset()))) or "none"
        raise UsageError(f"Open MPI {coll} algorithm {name} takes no segment size; "
                         f"segmented ones: {takes}")
    if segment_bytes < 0:
        raise UsageError(f"--segment-bytes must be >= 0, got {segment_bytes}")
    if name == "segmented_ring" and not segment_bytes:
        raise UsageError(f"Open MPI's {coll} segmented_ring needs --segment-bytes: without a "
                         "segment size it runs as a plain ring (add e.g. --segment-bytes 8192)")
    env = [("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
           (f"OMPI_MCA_coll_tuned_{coll}_algorithm", str(number))]
    if segment_bytes:
        env.append((f"OMPI_MCA_coll_tuned_{coll}_algorithm_segmentsize", str(segment_bytes)))
    return Forcing("openmpi", operation, number, name, segment_bytes, tuple(env))


def mpich_forcing(operation: str, algorithm: int | str, segment_bytes: int = 0,
                  names: tuple[str, ...] | None = None) -> Forcing:
    """The ``MPIR_CVAR_*`` variables that force ``algorithm`` (index or name) in MPICH.

    ``names`` is the installed library's own list (``mpich.mpich_catalogue``); without it the
    MPICH 4.x list above stands in (rendered job scripts for a machine that has MPICH)."""
    coll = "iallreduce" if operation == "iallreduce_overlap" else operation
    names = names or MPICH_ALGORITHMS[coll]
    text = str(algorithm)
    if text == DEFAULT:
        text = "0"
    index = int(text) if text.isdigit() else (names.index(text) if text in names else None)
    if index is None or not 0 <= index < len(names):
        valid = ", ".join(f"{i} {n}" for i, n in enumerate(names))
        raise UsageError(f"unknown MPICH {coll} algorithm {algorithm!r}; valid: {valid} "
                         f"(mpivars lists them under {cvar_of(coll)})")
    if segment_bytes:
        raise UsageError("--segment-bytes is Open MPI's; MPICH sets segment sizes through "
                         "its own MPIR_CVAR_*_SEGMENT_SIZE variables")
    if index == 0:
        return default_forcing("mpich", operation)
    env = (("MPIR_CVAR_DEVICE_COLLECTIVES", "none"),
           (cvar_of(coll), names[index]))
    return Forcing("mpich", operation, index, names[index], 0, env)


def cvar_of(collective: str) -> str:
    """MPICH's control variable that picks ``collective``'s algorithm on an intracommunicator."""
    return f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM"


def forcing_for(library: str, operation: str, algorithm: int | str | None,
                catalogue: Mapping[int, str] | None = None, segment_bytes: int = 0,
                mpich_names: tuple[str, ...] | None = None) -> Forcing:
    """The forcing of one run; ``algorithm`` None (or 0, 'default') forces nothing."""
    if operation not in OMPI_COLLECTIVE:
        raise UsageError(f"unknown operation {operation!r}; valid: {', '.join(OMPI_COLLECTIVE)}")
    wanted = DEFAULT if algorithm is None else algorithm
    if operation == "plogp":
        if wanted not in (0, "0", DEFAULT) or segment_bytes:
            raise UsageError("plogp times point-to-point messages: there is no collective "
                             "algorithm to force; leave --algorithm and --segment-bytes out")
        return default_forcing(library, operation, "point to point: no collective algorithm")
    if library == "openmpi":
        return openmpi_forcing(operation, wanted, catalogue or {0: "ignore"}, segment_bytes)
    if library == "mpich":
        return mpich_forcing(operation, wanted, segment_bytes, mpich_names)
    if wanted not in (0, "0", DEFAULT) or segment_bytes:
        raise UsageError(f"cannot force an algorithm with MPI library '{library}' (only Open "
                         "MPI and MPICH); leave --algorithm and --segment-bytes out")
    return default_forcing(library, operation,
                           f"MPI library '{library}' is neither Open MPI nor MPICH: its "
                           "default algorithms run")


def algorithms_of(library: str, operation: str, catalogue: Mapping[int, str] | None = None,
                  mpich_names: tuple[str, ...] | None = None) -> dict[int, str]:
    """Every algorithm one can force for ``operation`` (number -> name), default included."""
    if library == "openmpi":
        return dict(catalogue or {0: "ignore"}) if OMPI_COLLECTIVE[operation] else {0: DEFAULT}
    coll = "iallreduce" if operation == "iallreduce_overlap" else operation
    if library == "mpich" and coll in MPICH_ALGORITHMS:
        return dict(enumerate(mpich_names or MPICH_ALGORITHMS[coll]))
    return {0: DEFAULT}


def library_of(version_text: str) -> str:
    """'openmpi', 'mpich' or 'unknown' from ``MPI_Get_library_version`` or ``mpiexec
    --version`` text (Intel MPI and MVAPICH are MPICH derivatives and take its cvars)."""
    low = version_text.lower()
    if "open mpi" in low or "openrte" in low:
        return "openmpi"
    if "mpich" in low or "hydra" in low or "intel" in low or "mvapich" in low:
        return "mpich"
    return "unknown"


# ompi_info's answer is kept in the private cache_dir(), sealed with this user's key
# (cachedir.store_text): every rank of every run needs it before MPI starts, and one ompi_info
# costs about 0.3 s of CPU. A copy in a folder others can write, or one this user's key did not
# seal, is never believed (issue 66: a planted copy made "--algorithm ring" record "ring" while
# recursive doubling ran): ompi_info is asked again.


def _cache_name(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = hashlib.sha256(f"{os.path.realpath(path)}:{st.st_mtime_ns}:{st.st_size}".encode())
    return f"ompi_info-tuned-{key.hexdigest()[:16]}.sealed"


@functools.lru_cache(maxsize=1)
def _ompi_info_text() -> str:
    path = shutil.which("ompi_info")
    if path is None:
        raise EnvironmentProblem("ompi_info not found on PATH: cannot list Open MPI's tuned "
                                 "algorithms; install openmpi-bin or load your MPI module")
    name = _cache_name(path)
    kept = None if name is None else load_text(name)
    if kept is not None:
        return kept
    try:
        out = subprocess.run([path, "--param", "coll", "tuned", "--level", "9"],
                             capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"cannot run {path}: {exc}") from None
    if name is not None and "coll_tuned_" in out.stdout:
        store_text(name, out.stdout)  # a cache that cannot be written is no error
    return out.stdout


def ompi_catalogue(operation: str, text: str | None = None) -> dict[int, str]:
    """Open MPI's tuned algorithms for ``operation`` (number -> name), from ``ompi_info``."""
    coll = OMPI_COLLECTIVE.get(operation)
    if coll is None:
        return {0: DEFAULT}
    try:
        found = parse_ompi_algorithms(_ompi_info_text() if text is None else text, coll)
    except AnalysisError as exc:
        raise EnvironmentProblem(str(exc)) from None
    return {number: name for name, number in found.items()}
