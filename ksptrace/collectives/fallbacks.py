"""Which algorithm really ran: Open MPI's documented fallbacks inside a forced algorithm.

Forcing ``coll_tuned_allreduce_algorithm`` names the function Open MPI calls, but some of those
functions hand the call to another one for small counts, without saying so. A trace that only
names the setting would then compare identical code under two names, so every collectives trace
also records the algorithm that ran at each message size (``algorithm_ran``), derived from these
rules (Open MPI 4.x and 5.x, ``ompi/mca/coll/base/coll_base_allreduce.c``):

* ``ring`` (``ompi_coll_base_allreduce_intra_ring``): with fewer elements than ranks
  (``count < size``) it calls recursive doubling.
* ``segmented_ring`` (``..._ring_segmented``): the segment holds ``segment_bytes / type size``
  elements, one more when the remainder exceeds half an element (``COLL_BASE_COMPUTED_SEGCOUNT``
  in ``coll_base_functions.h``; all of them when the segment size is 0, or smaller than one
  element, or not smaller than the message); with ``count < size * segcount`` it calls the
  plain ring, whose own rule then applies. Without a segment size it is therefore always the
  plain ring. Where it runs, it runs ``num_phases`` phases (:func:`segmented_ring_phases`,
  recorded per size as ``segment_phases``): with one (the message holds P segments, and not
  more than 1.5 P) each block is one piece, the plain ring's steps under the segmented name.
* ``rabenseifner`` (``..._redscat_allgather``): with fewer elements than the largest power of
  two not above the communicator size (``count < pof2``), or a non-commutative operation, it
  calls basic linear.

MPICH 4.0 (``src/mpi/coll/coll_algorithms.txt`` lists each forced algorithm's restrictions;
``maint/gen_coll.py`` turns a failed one into a jump to the automatic choice, silently by default,
``MPIR_CVAR_COLLECTIVE_FALLBACK=silent``):

* ``reduce_scatter_allgather`` needs ``count >= pof2`` and a built-in operation; otherwise
  ``auto`` decides, and its default table (``maint/tuning/coll/mpir/generic.json``) takes
  recursive doubling for ``count < pof2``.
* ``smp`` needs a commutative operation and a node-aware communicator, which MPI_COMM_WORLD is
  (``MPIR_Comm_create_subcomms``): it runs as forced.

Every other algorithm, operation and library runs as forced (no fallback is known to ksptrace).
``tests/collectives/test_fallbacks.py`` checks the Open MPI rules against summation-order
fingerprints under ``mpiexec -n 3`` and ``-n 4``; ``tests/collectives/test_mpich.py`` checks the
MPICH rule with NaN payloads, because MPICH's allreduce algorithms add in the same order at
P = 3 and 4 and only the order of the operands tells them apart.
"""

from __future__ import annotations

from collections.abc import Sequence


def _pof2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _segcount(count: int, type_bytes: int, segment_bytes: int) -> int:
    """Elements per segment, as ``COLL_BASE_COMPUTED_SEGCOUNT`` rounds (all ``count`` when the
    segment size is below one element or not below the message)."""
    if type_bytes <= segment_bytes < type_bytes * count:
        segcount, residual = divmod(segment_bytes, type_bytes)
        return segcount + (residual > type_bytes // 2)
    return count


def segmented_ring_phases(count: int, nprocs: int, type_bytes: int,
                          segment_bytes: int) -> int | None:
    """The number of phases Open MPI's segmented-ring allreduce runs for ``count`` elements of
    ``type_bytes`` bytes on ``nprocs`` ranks; None where it runs none (one rank, or fewer
    elements than ``nprocs`` segments: it calls the plain ring).

    ``ompi_coll_base_allreduce_intra_ring_segmented`` (Open MPI 4.1.4 to 5.0,
    ``coll_base_allreduce.c``): ``num_phases = count / (size * segcount)``, one more when the
    remainder is at least ``size`` and more than half of ``size * segcount`` (integer halves).
    Each phase reduces one segment of every rank's block; with one phase each block is one
    piece, as the plain ring cuts it: the plain ring's steps under the segmented name.
    """
    if nprocs < 2:
        return None
    whole = nprocs * _segcount(count, type_bytes, segment_bytes)
    if count < whole:
        return None
    phases, rest = divmod(count, whole)
    return phases + (rest >= nprocs and rest > whole // 2)


def openmpi_allreduce(name: str, count: int, nprocs: int, type_bytes: int,
                      segment_bytes: int = 0) -> str:
    """The allreduce algorithm Open MPI runs when ``name`` is forced for ``count`` elements of
    ``type_bytes`` bytes on ``nprocs`` ranks (SUM: commutative)."""
    if nprocs < 2:
        return name
    if name == "segmented_ring" and segmented_ring_phases(count, nprocs, type_bytes,
                                                          segment_bytes) is None:
        name = "ring"
    if name == "ring" and count < nprocs:
        return "recursive_doubling"
    if name == "rabenseifner" and count < _pof2_floor(nprocs):
        return "basic_linear"
    return name


def mpich_allreduce(name: str, count: int, nprocs: int) -> str:
    """The allreduce algorithm MPICH 4.0 runs when ``name`` is forced (SUM: built in)."""
    if nprocs > 1 and name == "reduce_scatter_allgather" and count < _pof2_floor(nprocs):
        return "recursive_doubling"
    return name


def algorithm_ran(library: str, operation: str, name: str, count: int, nprocs: int,
                  type_bytes: int, segment_bytes: int = 0) -> str:
    """The algorithm that ran for one message size (``name`` when no fallback is known)."""
    if library == "openmpi" and operation == "allreduce":
        return openmpi_allreduce(name, count, nprocs, type_bytes, segment_bytes)
    if library == "mpich" and operation == "allreduce":
        return mpich_allreduce(name, count, nprocs)
    return name


def _type_bytes(size: int) -> int:
    """The element type the benchmark uses: float64 where the size is a multiple of 8 bytes,
    else bytes."""
    return 8 if size % 8 == 0 else 1


def ran_per_size(library: str, operation: str, name: str, sizes: Sequence[int], nprocs: int,
                 segment_bytes: int = 0) -> dict[int, str]:
    """``algorithm_ran`` for each message size in bytes, with the benchmark's element type."""
    out = {}
    for size in sizes:
        type_bytes = _type_bytes(size)
        out[int(size)] = algorithm_ran(library, operation, name, size // type_bytes, nprocs,
                                       type_bytes, segment_bytes)
    return out


def phases_per_size(library: str, operation: str, name: str, sizes: Sequence[int],
                    nprocs: int, segment_bytes: int = 0) -> dict[int, int] | None:
    """Message size in bytes -> the phases a forced Open MPI segmented-ring allreduce ran
    there (``segment_phases`` in the trace), only at the sizes where it ran (elsewhere
    ``algorithm_ran`` names what did); None for any other algorithm, library or operation."""
    if (library, operation, name) != ("openmpi", "allreduce", "segmented_ring"):
        return None
    out: dict[int, int] = {}
    for size in sizes:
        type_bytes = _type_bytes(size)
        phases = segmented_ring_phases(size // type_bytes, nprocs, type_bytes, segment_bytes)
        if phases is not None:
            out[int(size)] = phases
    return out
