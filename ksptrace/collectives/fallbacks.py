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
  plain ring.
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


def openmpi_allreduce(name: str, count: int, nprocs: int, type_bytes: int,
                      segment_bytes: int = 0) -> str:
    """The allreduce algorithm Open MPI runs when ``name`` is forced for ``count`` elements of
    ``type_bytes`` bytes on ``nprocs`` ranks (SUM: commutative)."""
    if nprocs < 2:
        return name
    if name == "segmented_ring":
        segcount = count
        if type_bytes <= segment_bytes < type_bytes * count:
            segcount, residual = divmod(segment_bytes, type_bytes)
            segcount += residual > type_bytes // 2
        if count < nprocs * segcount:
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


def ran_per_size(library: str, operation: str, name: str, sizes: Sequence[int], nprocs: int,
                 segment_bytes: int = 0) -> dict[int, str]:
    """``algorithm_ran`` for each message size in bytes, with the element type the benchmark
    uses (float64 where the size is a multiple of 8 bytes, else bytes)."""
    out = {}
    for size in sizes:
        type_bytes = 8 if size % 8 == 0 else 1
        out[int(size)] = algorithm_ran(library, operation, name, size // type_bytes, nprocs,
                                       type_bytes, segment_bytes)
    return out
