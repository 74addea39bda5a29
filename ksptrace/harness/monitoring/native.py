"""The C stamping monitor (``stamp_monitor.c``): compiled once per machine, loaded with ctypes.

A KSP monitor written in Python costs about 0.45 us per iteration: 0.3 us of petsc4py's
dispatch (a new KSP wrapper per call) and 0.15 us of its own. At 10^3 unknowns per rank an
iteration takes 10-14 us, so that is 3-5 % of the very time being measured. The C monitor does
the same two stores through PETSc's ``KSPMonitorSet`` and costs some 30 ns.

It is compiled on first use with the machine's C compiler (``$CC``, else ``cc``; Debian's PETSc
stack brings gcc) for this PETSc build's integer and real types, into the user's cache folder
(:func:`ksptrace.cachedir.cache_dir`), and reused from there. A library is code: it is built
and loaded only in a folder no one else can write, named after its content's digest, which is
checked before each load (:mod:`ksptrace.harness.monitoring.private_files`); a corrupt one is
rebuilt once. Where that cannot be done (no compiler, a PETSc with quad-precision reals, a clock
other than ``MPI.Wtime``, no private folder), the Python monitor is used, and a trace says which one
stamped it (attribute ``monitor``).
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
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ksptrace.cachedir import CACHE_ENV, cache_dir
from ksptrace.errors import EnvironmentProblem
from ksptrace.harness.monitoring import private_files

MONITOR_ENV = "KSPTRACE_MONITOR"
"""``auto`` (default): the C monitor where it can be built; ``c``: it or an error; ``python``."""
POLL_SECONDS = 0.05
"""How often the C monitor lets the interpreter in (the watchdog, signal handlers)."""
SOURCE = Path(__file__).with_name("stamp_monitor.c")
COMPILE_SECONDS = 60.0
"""The compiler gets this long (``KSPTRACE_CC_TIMEOUT`` overrides); then the Python monitor."""
COMPILE_TIMEOUT_ENV = "KSPTRACE_CC_TIMEOUT"
EXTRA_CFLAGS_ENV = "KSPTRACE_MONITOR_CFLAGS"
"""Extra compiler flags (part of the cache key): the tests build an AddressSanitizer variant."""
DIGEST_CHARS = 32
"""Hex digits of the library's SHA-256 in its file name, checked before every load."""

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


def _spec(int_bytes: int, real_bytes: int) -> tuple[list[str], str] | str:
    """The compiler flags and the library's name stem for these PETSc types, or why none.

    The stem is a hash of the source, the flags and the architecture, not the compiler: a
    library built on a login node (a shared home) serves compute nodes that have no compiler."""
    int_c, real_c = _INT_TYPES.get(int_bytes), _REAL_TYPES.get(real_bytes)
    if int_c is None or real_c is None:
        return (f"this PETSc has {int_bytes}-byte integers and {real_bytes}-byte reals, which "
                "the C monitor does not handle")
    flags = ["-O2", "-fPIC", "-shared", f"-DKSPTRACE_INT={int_c}", f"-DKSPTRACE_REAL={real_c}",
             *extra_flags()]
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        return f"cannot read {SOURCE}: {exc.strerror or exc}"
    key = hashlib.sha256(source + "\0".join([*flags, platform.machine()]).encode())
    return flags, f"stamp_monitor-{key.hexdigest()[:16]}"


def extra_flags() -> list[str]:
    """The compiler flags of :data:`EXTRA_CFLAGS_ENV` (AddressSanitizer in the tests)."""
    return shlex.split(os.environ.get(EXTRA_CFLAGS_ENV, ""))


def _folders() -> list[Path]:
    return [cache_dir(), Path(tempfile.gettempdir()) / f"ksptrace-{os.geteuid()}"]


def _timeout() -> float:
    try:
        return float(os.environ.get(COMPILE_TIMEOUT_ENV, "") or COMPILE_SECONDS)
    except ValueError:
        return COMPILE_SECONDS


def _compile(cc: list[str], flags: list[str], folder: Path, stem: str,
             source: Path = SOURCE) -> str | None:
    """Compile ``source`` into a fresh private folder inside ``folder``, then publish the
    library under its content digest by one rename (ranks compiling at once each publish a
    whole file); why not, or None."""
    build = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))  # mode 0700
    try:
        out = build / "lib.so"
        limit = _timeout()
        try:
            proc = subprocess.Popen([*cc, *flags, "-o", str(out), str(source)],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as exc:
            return f"{cc[0]} did not run: {exc}"
        try:
            _, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return f"{cc[0]} took more than {limit:g} s to compile {source.name}; it was stopped"
        if proc.returncode != 0:
            first = (err.strip().splitlines() or ["no message"])[0]
            return f"{cc[0]} failed on {source.name}: {first}"
        fd = private_files.open_private(out)
        try:
            digest = private_files.digest_of(fd)
        finally:
            os.close(fd)
        os.replace(out, folder / f"{stem}-{digest[:DIGEST_CHARS]}.so")
        return None
    except (OSError, ValueError) as exc:
        return f"cannot build {source.name} in {folder}: {exc}"
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _declare_monitor(lib: ctypes.CDLL) -> None:
    lib.ksptrace_stamp_new.restype = _vp
    lib.ksptrace_stamp_new.argtypes = [_vp, ctypes.c_double, _vp, _vp, _vp, _vp, _vp]
    lib.ksptrace_stamp_target.restype = None
    lib.ksptrace_stamp_target.argtypes = [_vp, _vp, _vp, _vp, ctypes.c_longlong,
                                          ctypes.c_longlong]
    lib.ksptrace_stamp_marks.restype = None
    lib.ksptrace_stamp_marks.argtypes = [_vp, _vp, _vp]
    lib.ksptrace_stamp_disable.restype = None
    lib.ksptrace_stamp_disable.argtypes = [_vp, ctypes.c_longlong]
    lib.ksptrace_stamp_bind.restype = None
    lib.ksptrace_stamp_bind.argtypes = [_vp, _vp]
    lib.ksptrace_stamp_serves.restype = ctypes.c_int
    lib.ksptrace_stamp_serves.argtypes = [_vp, _vp]
    lib.ksptrace_stamp_release.restype = None
    lib.ksptrace_stamp_release.argtypes = [_vp]
    lib.ksptrace_stamp_retain.restype = None
    lib.ksptrace_stamp_retain.argtypes = [_vp]
    lib.ksptrace_compiler.restype = ctypes.c_char_p
    lib.ksptrace_compiler.argtypes = []


def _load_cached(folder: Path, stem: str, declare: Callable[[ctypes.CDLL], None] = _declare_monitor
                 ) -> tuple[ctypes.CDLL, Path] | str | None:
    """A verified library of ``stem`` in the private ``folder``; why the ones there are not
    (each is removed), or None when there is none."""
    bad = None
    for path in sorted(folder.glob(f"{stem}-*.so")):
        expected = path.name[len(stem) + 1:-3]
        try:
            fd = private_files.open_private(path)
        except (OSError, ValueError) as exc:
            bad = f"{path.name}: {exc}"
        else:
            try:
                if private_files.digest_of(fd)[:DIGEST_CHARS] != expected:
                    bad = f"{path.name}: its content is not what was built (corrupt)"
                else:
                    lib = ctypes.CDLL(str(path))
                    declare(lib)
                    return lib, path
            except (OSError, AttributeError) as exc:
                bad = f"{path.name}: {exc}"
            finally:
                os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
    return bad


_notes: list[str] = []


def build_notes() -> tuple[str, ...]:
    """What loading the C monitor had to repair in this process (a cached library rebuilt)."""
    return tuple(_notes)


def _address(function: Any) -> int:
    value = ctypes.cast(function, _vp).value
    assert value is not None
    return value


def load_library(int_bytes: int, real_bytes: int) -> tuple[ctypes.CDLL, Path] | str:
    """The C monitor's library for these PETSc types and its file, built when missing, loaded
    only from a private folder (:mod:`ksptrace.harness.monitoring.private_files`) and only when its
    content is what was built; or why it cannot be had."""
    spec = _spec(int_bytes, real_bytes)
    if isinstance(spec, str):
        return spec
    flags, stem = spec
    return load_built(SOURCE, flags, stem, _declare_monitor, "the C monitor")


def load_built(source: Path, flags: list[str], stem: str,
               declare: Callable[[ctypes.CDLL], None], what: str
               ) -> tuple[ctypes.CDLL, Path] | str:
    """``source`` compiled with ``flags`` into a library named ``stem``-DIGEST.so in a private
    cache folder (built when missing, its digest checked before each load) and loaded, its
    functions typed by ``declare``; or why it cannot be had. ``stem`` must change with the
    source and the flags (a hash of both)."""
    unsafe = []
    for folder in _folders():
        problem = private_files.private_folder(folder)
        if problem is not None:
            unsafe.append(problem)
            continue
        found = _load_cached(folder, stem, declare)
        if isinstance(found, tuple):
            return found
        cc = _compiler()
        if cc is None:
            return "no C compiler found ($CC, cc, gcc or clang)"
        why = _compile(cc, flags, folder, stem, source)
        if why is not None:
            return why
        again = _load_cached(folder, stem, declare)
        if not isinstance(again, tuple):
            return f"{what} built in {folder} cannot be loaded ({again})"
        if found is not None:
            _notes.append(f"the cached {what} was unusable ({found}); it was rebuilt")
        return again
    return (f"no private folder to build {what} in (" + "; ".join(unsafe)
            + f"); set {CACHE_ENV} to a folder only you can write")


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


def compiler() -> str | None:
    """The compiler that built the C monitor this process loaded (its ``__VERSION__``), or
    None when the C monitor is not loaded."""
    if not _native.cache_info().currsize:
        return None
    found = _native()
    if isinstance(found, str):
        return None
    raw = found.lib.ksptrace_compiler()
    return raw.decode(errors="replace") if raw else None


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
         owner: int, marks: tuple[int, Any] | None = None) -> int | None:
    """Point ``ksp``'s C context (registered on first use) at ``arrays`` (stamps, norms,
    beyond); the context, with a reference for the caller that :func:`unbind` gives back, or
    None when PETSc refused the monitor."""
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
    lib.ksptrace_stamp_retain(ctx)
    bind_again(lib, ctx, arrays, capacity, owner, marks)
    return int(ctx)


def unbind(lib: ctypes.CDLL, ctx: int, owner: int) -> None:
    """Stop ``ctx`` writing into monitor ``owner``'s arrays (no-op if it serves another) and
    give back the reference :func:`bind` took: call once per bind."""
    lib.ksptrace_stamp_disable(ctx, owner)
    lib.ksptrace_stamp_release(ctx)


def bind_again(lib: ctypes.CDLL, ctx: int, arrays: tuple[Any, Any, Any], capacity: int,
               owner: int, marks: tuple[int, Any] | None = None) -> None:
    """Point the context of a bound monitor at its new arrays (after a resize), and at the
    wait totals' address and the [capacity, 2] array they are copied into (``marks``)."""
    stamps, norms, beyond = arrays
    lib.ksptrace_stamp_target(ctx, stamps.ctypes.data, norms.ctypes.data, beyond.ctypes.data,
                              capacity, owner)
    if marks is not None:
        lib.ksptrace_stamp_marks(ctx, marks[0], marks[1].ctypes.data)
