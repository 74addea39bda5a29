"""The C stamping monitor (``stamp_monitor.c``): compiled once per machine, loaded with ctypes.

A KSP monitor written in Python costs about 0.45 us per iteration: 0.3 us of petsc4py's
dispatch (a new KSP wrapper per call) and 0.15 us of its own. At 10^3 unknowns per rank an
iteration takes 10-14 us, so that is 3-5 % of the very time being measured. The C monitor does
the same two stores through PETSc's ``KSPMonitorSet`` and costs some 30 ns.

It is compiled on first use with the machine's C compiler (``$CC``, else ``cc``; Debian's PETSc
stack brings gcc) for this PETSc build's integer and real types, into the user's cache folder
(:func:`ksptrace.cachedir.cache_dir`), and reused from there. Where that cannot be done (no
compiler, a PETSc with quad-precision reals, a clock other than ``MPI.Wtime``), the Python
monitor is used, and a trace says which one stamped it (attribute ``monitor``).
``KSPTRACE_MONITOR=python`` always uses the Python monitor; ``=c`` makes a missing C monitor an
error instead of a fallback.

The C monitor enters the interpreter every :data:`POLL_SECONDS` to let the lifeline watchdog
thread run and to run Python's signal handlers, so a solve stays as interruptible as with a
Python monitor.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksptrace.cachedir import cache_dir
from ksptrace.errors import EnvironmentProblem

MONITOR_ENV = "KSPTRACE_MONITOR"
"""``auto`` (default): the C monitor where it can be built; ``c``: it or an error; ``python``."""
POLL_SECONDS = 0.05
"""How often the C monitor lets the interpreter in (the watchdog, signal handlers)."""
SOURCE = Path(__file__).with_name("stamp_monitor.c")

_INT_TYPES = {4: "int", 8: "long long"}
_REAL_TYPES = {4: "float", 8: "double"}
_vp = ctypes.c_void_p


@dataclass(frozen=True)
class NativeMonitor:
    """The loaded C library and the addresses PETSc and the contexts need."""

    lib: ctypes.CDLL
    path: Path
    monitor: int
    destroy: int
    wtime: int
    python_api: tuple[int, int, int, int, int]


def mode() -> str:
    """``auto``, ``c`` or ``python``, from :data:`MONITOR_ENV`."""
    value = os.environ.get(MONITOR_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "c", "python"):
        raise EnvironmentProblem(f"{MONITOR_ENV}={value!r} is not a monitor; use auto, c or "
                                 "python")
    return value


def _compiler() -> list[str] | None:
    cc = os.environ.get("CC", "").strip()
    if cc:
        return shlex.split(cc)
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def _build(int_bytes: int, real_bytes: int) -> Path | str:
    """The compiled library (cached), or why it cannot be had.

    The cache key is the source, the flags and the architecture, not the compiler: a library
    built on a login node (a shared home) serves compute nodes that have no compiler."""
    int_c, real_c = _INT_TYPES.get(int_bytes), _REAL_TYPES.get(real_bytes)
    if int_c is None or real_c is None:
        return (f"this PETSc has {int_bytes}-byte integers and {real_bytes}-byte reals, which "
                "the C monitor does not handle")
    flags = ["-O2", "-fPIC", "-shared", f"-DKSPTRACE_INT={int_c}", f"-DKSPTRACE_REAL={real_c}"]
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        return f"cannot read {SOURCE}: {exc.strerror or exc}"
    key = hashlib.sha256(source + "\0".join([*flags, platform.machine()]).encode())
    name = f"stamp_monitor-{key.hexdigest()[:16]}.so"
    folders = (cache_dir(), Path(tempfile.gettempdir()) / f"ksptrace-{os.getuid()}")
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    cc = _compiler()
    if cc is None:
        return "no C compiler found ($CC, cc, gcc or clang)"
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            continue
        tmp = folder / f".{name}.{os.getpid()}"
        try:
            done = subprocess.run([*cc, *flags, "-o", str(tmp), str(SOURCE)],
                                  capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{cc[0]} did not run: {exc}"
        if done.returncode != 0:
            with contextlib.suppress(OSError):
                tmp.unlink()
            first = (done.stderr.strip().splitlines() or ["no message"])[0]
            return f"{cc[0]} failed on {SOURCE.name}: {first}"
        os.replace(tmp, folder / name)  # atomic: ranks compiling at once publish whole files
        return folder / name
    return f"no writable cache folder ({cache_dir()}, or the temporary folder)"


def _address(function: Any) -> int:
    value = ctypes.cast(function, _vp).value
    assert value is not None
    return value


def _declare(lib: ctypes.CDLL) -> None:
    lib.ksptrace_stamp_new.restype = _vp
    lib.ksptrace_stamp_new.argtypes = [_vp, ctypes.c_double, _vp, _vp, _vp, _vp, _vp]
    lib.ksptrace_stamp_target.restype = None
    lib.ksptrace_stamp_target.argtypes = [_vp, _vp, _vp, _vp, ctypes.c_longlong,
                                          ctypes.c_longlong]
    lib.ksptrace_stamp_disable.restype = None
    lib.ksptrace_stamp_disable.argtypes = [_vp, ctypes.c_longlong]
    lib.ksptrace_stamp_bind.restype = None
    lib.ksptrace_stamp_bind.argtypes = [_vp, _vp]
    lib.ksptrace_stamp_serves.restype = ctypes.c_int
    lib.ksptrace_stamp_serves.argtypes = [_vp, _vp]
    lib.ksptrace_stamp_release.restype = None
    lib.ksptrace_stamp_release.argtypes = [_vp]


def load_library(int_bytes: int, real_bytes: int) -> tuple[ctypes.CDLL, Path] | str:
    """The C monitor's library for these PETSc types (built when missing) and its file, or
    why it cannot be had."""
    built = _build(int_bytes, real_bytes)
    if isinstance(built, str):
        return built
    try:
        lib = ctypes.CDLL(str(built))
        _declare(lib)
    except (OSError, AttributeError) as exc:
        return f"cannot load {built}: {exc}"
    return lib, built


@functools.cache
def _native() -> NativeMonitor | str:
    import numpy as np
    from mpi4py import MPI
    from petsc4py import PETSc

    loaded = load_library(np.dtype(PETSc.IntType).itemsize, np.dtype(PETSc.RealType).itemsize)
    if isinstance(loaded, str):
        return loaded
    lib, path = loaded
    try:
        wtime = _address(ctypes.CDLL(MPI.__file__).MPI_Wtime)
    except (OSError, AttributeError) as exc:
        return f"MPI_Wtime not found through mpi4py ({exc})"
    api = ctypes.pythonapi
    python_api = (_address(api.PyGILState_Ensure), _address(api.PyGILState_Release),
                  _address(api.PyEval_SaveThread), _address(api.PyEval_RestoreThread),
                  _address(api.PyErr_CheckSignals))
    return NativeMonitor(lib, path, _address(lib.ksptrace_stamp),
                         _address(lib.ksptrace_stamp_destroy), wtime, python_api)


def native(clock: Any) -> NativeMonitor | str:
    """The C monitor for a monitor whose clock is ``clock``, or why the Python one is used
    (an EnvironmentProblem instead when :data:`MONITOR_ENV` asks for C)."""
    wanted = mode()
    if wanted == "python":
        return f"{MONITOR_ENV}=python"
    from mpi4py import MPI

    found = _native() if clock is MPI.Wtime else "the clock is not MPI.Wtime"
    if isinstance(found, str) and wanted == "c":
        raise EnvironmentProblem(f"{MONITOR_ENV}=c but the C monitor is unavailable: {found}; "
                                 f"install a C compiler or unset {MONITOR_ENV}")
    return found


_contexts: dict[int, int] = {}
"""KSP handle -> the C context registered on it: PETSc allows 5 monitors per KSP and has no
call that removes one, so a KSP keeps one context and it is retargeted from monitor to
monitor."""


def bind(nat: NativeMonitor, ksp: Any, arrays: tuple[Any, Any, Any], capacity: int,
         owner: int) -> int | None:
    """Point ``ksp``'s C context (registered on first use) at ``arrays`` (stamps, norms,
    beyond); the context, or None when PETSc refused the monitor."""
    handle = int(ksp.handle)
    lib = nat.lib
    ctx = _contexts.get(handle)
    if ctx is not None and not lib.ksptrace_stamp_serves(ctx, handle):
        lib.ksptrace_stamp_release(ctx)  # its KSP was destroyed; this is another at that address
        del _contexts[handle]
        ctx = None
    if ctx is None:
        ctx = lib.ksptrace_stamp_new(nat.wtime, POLL_SECONDS, *nat.python_api)
        if not ctx:
            return None
        from petsc4py import PETSc

        petsc = ctypes.CDLL(PETSc.__file__)
        petsc.KSPMonitorSet.restype = ctypes.c_int
        petsc.KSPMonitorSet.argtypes = [_vp, _vp, _vp, _vp]
        if petsc.KSPMonitorSet(handle, nat.monitor, ctx, nat.destroy) != 0:
            lib.ksptrace_stamp_release(ctx)  # PETSc's reference was never taken
            lib.ksptrace_stamp_release(ctx)
            return None
        lib.ksptrace_stamp_bind(ctx, handle)
        _contexts[handle] = ctx
    bind_again(lib, ctx, arrays, capacity, owner)
    return int(ctx)


def unbind(lib: ctypes.CDLL, ctx: int, owner: int) -> None:
    """Stop ``ctx`` writing into monitor ``owner``'s arrays (no-op if it serves another)."""
    lib.ksptrace_stamp_disable(ctx, owner)


def bind_again(lib: ctypes.CDLL, ctx: int, arrays: tuple[Any, Any, Any], capacity: int,
               owner: int) -> None:
    """Point the context of a bound monitor at its new arrays (after a resize)."""
    stamps, norms, beyond = arrays
    lib.ksptrace_stamp_target(ctx, stamps.ctypes.data, norms.ctypes.data, beyond.ctypes.data,
                              capacity, owner)
