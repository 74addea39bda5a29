"""Back-to-back timing in C (``timing_kernel.c``): N calls between two clock reads, per rank.

The barrier-separated loop of :mod:`ksptrace.collectives.bench` times one call at a time, as a
Krylov iteration pays it, and matches a bare mpi4py loop; but a back-to-back mpi4py loop still
costs the Python call (0.66 us at 8 B on two ranks here, against 0.16 us for the Intel MPI
Benchmarks' loop). This kernel runs the standard benchmarks' loop without the interpreter:
``MPI_Allreduce``, ``MPI_Barrier`` and ``MPI_Wtime`` are taken from the MPI library mpi4py
loaded, and the handles passed as that library's handle type, so no MPI header or wrapper
compiler is needed and the kernel cannot link a second MPI. It is compiled once per machine
and handle type and loaded like the stamping monitor (:func:`ksptrace.harness.monitoring.native.
load_built`: a private cache folder, the library's digest checked before each load).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ksptrace.collectives.operations import Prepared
from ksptrace.errors import EnvironmentProblem
from ksptrace.harness.monitoring import native

SOURCE = Path(__file__).with_name("timing_kernel.c")
_HANDLE_TYPES = {4: ("int", ctypes.c_int), 8: ("void*", ctypes.c_void_p)}


def _declare(lib: ctypes.CDLL, handle: Any) -> None:
    vp = ctypes.c_void_p
    f = lib.ksptrace_allreduce_back_to_back
    f.restype = ctypes.c_int
    f.argtypes = [vp, vp, vp, vp, vp, ctypes.c_int, handle, handle, handle,
                  ctypes.c_long, ctypes.c_long, ctypes.c_long, vp]


@dataclass(frozen=True)
class Kernel:
    lib: ctypes.CDLL
    handle: Any
    """The ctypes type of the MPI library's handles."""
    functions: tuple[int, int, int]
    """Addresses of MPI_Allreduce, MPI_Barrier and MPI_Wtime in the library mpi4py loaded."""


def build(source: Path, declare: Callable[[ctypes.CDLL, Any], None], what: str
          ) -> tuple[ctypes.CDLL, Any] | str:
    """``source`` compiled for the handle type of the MPI library mpi4py loaded (built when
    missing, in a private cache folder, its digest checked before each load) with its
    functions typed by ``declare(lib, handle)``; the library and the handles' ctypes type, or
    why it cannot be had."""
    from mpi4py import MPI

    size = MPI._sizeof(MPI.Comm)
    if size not in _HANDLE_TYPES:
        return f"this MPI's handles are {size} bytes, which {what} does not handle"
    c_type, handle = _HANDLE_TYPES[size]
    flags = ["-O2", "-fPIC", "-shared", f"-DKSPTRACE_HANDLE={c_type}"]
    try:
        text = source.read_bytes()
    except OSError as exc:
        return f"cannot read {source}: {exc.strerror or exc}"
    key = hashlib.sha256(text + "\0".join([*flags, platform.machine()]).encode())
    loaded = native.load_built(source, flags, f"{source.stem}-{key.hexdigest()[:16]}",
                               lambda lib: declare(lib, handle), what)
    return loaded if isinstance(loaded, str) else (loaded[0], handle)


def mpi_functions(names: tuple[str, ...]) -> tuple[int, ...] | str:
    """The addresses of the MPI functions ``names`` in the library mpi4py loaded, or why not."""
    from mpi4py import MPI

    try:
        mpi = ctypes.CDLL(MPI.__file__)
        found = tuple(ctypes.cast(getattr(mpi, name), ctypes.c_void_p).value or 0
                      for name in names)
    except (OSError, AttributeError) as exc:
        return f"MPI functions not found through mpi4py ({exc})"
    missing = [n for n, f in zip(names, found, strict=True) if not f]
    return f"{', '.join(missing)} not found through mpi4py" if missing else found


@functools.cache
def load() -> Kernel | str:
    """The kernel, built when missing, or why it cannot be had."""
    built = build(SOURCE, _declare, "the C timing kernel")
    if isinstance(built, str):
        return built
    functions = mpi_functions(("MPI_Allreduce", "MPI_Barrier", "MPI_Wtime"))
    if isinstance(functions, str):
        return functions
    return Kernel(built[0], built[1], (functions[0], functions[1], functions[2]))


def kernel() -> Kernel:
    """The kernel, or an EnvironmentProblem saying why ``--mode back-to-back`` cannot run."""
    found = load()
    if isinstance(found, str):
        raise EnvironmentProblem(f"--mode back-to-back needs the C timing kernel: {found}; "
                                 "install a C compiler (cc) or use --mode per-call")
    return found


def allreduce_back_to_back(k: Kernel, comm: Any, send: np.ndarray, recv: np.ndarray,
                           calls: int, warmup: int, repetitions: int) -> np.ndarray:
    """Collective over ``comm``: per repetition, the time of ``calls`` back-to-back
    MPI_Allreduce (SUM) of ``send`` into ``recv`` over ``calls``, on this rank ([R])."""
    from mpi4py import MPI

    if send.dtype == np.float64:
        datatype, count = MPI.DOUBLE, send.size
    elif send.dtype == np.uint8:
        datatype, count = MPI.UNSIGNED_CHAR, send.size
    else:
        raise ValueError(f"the C kernel reduces float64 or uint8, not {send.dtype}")
    out = np.empty(repetitions)
    handles = (MPI._handleof(datatype), MPI._handleof(MPI.SUM), MPI._handleof(comm))
    reduce, barrier, wtime = k.functions
    rc = k.lib.ksptrace_allreduce_back_to_back(
        reduce, barrier, wtime, send.ctypes.data, recv.ctypes.data, count, *handles, calls,
        warmup, repetitions, out.ctypes.data)
    if rc != 0:
        raise EnvironmentProblem(f"MPI_Allreduce failed in the C kernel (error code {rc})")
    return out


def time_back_to_back(comm: Any, prepared: Prepared, calls: int, repetitions: int,
                      warmup: int) -> tuple[np.ndarray, str | None]:
    """Per repetition (output reset and value checked outside the clock reads): the time per
    call of ``calls`` back-to-back calls on this rank; and the first wrong result."""
    if prepared.buffers is None:
        raise ValueError("the C kernel times reductions with buffers (allreduce)")
    send, recv = prepared.buffers
    k = kernel()
    out = np.empty(repetitions)
    wrong: str | None = None
    for i in range(warmup + repetitions):  # one repetition per C call: signals in between
        prepared.reset()
        per_call = allreduce_back_to_back(k, comm, send, recv, calls, 0, 1)
        if i >= warmup:
            out[i - warmup] = per_call[0]
        if wrong is None:
            wrong = prepared.check()
    return out, wrong
