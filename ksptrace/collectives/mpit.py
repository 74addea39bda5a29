"""Reading the MPI library's control variables back through the MPI tool interface (MPI_T).

mpi4py 3.1 does not wrap MPI_T, so the C functions are called through ctypes, on the MPI library
this process has already loaded (found in /proc/self/maps, or among the global symbols): never
one loaded afresh by name, which under MPICH would bring Open MPI's libmpi into the process. This
is how a run shows the algorithm the library *holds*, not only the variable that asked for it:
Open MPI keeps an enum variable at its default when given a value it does not know (and says
so only in a help message that its launcher may lose). The standard allows MPI_T before
MPI_Init, so :func:`descriptions` also serves a process that never starts MPI.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
from collections.abc import Iterable, Iterator

MPI_SUCCESS = 0
_LOADED = re.compile(r"\s(/\S*/lib(?:mpi|mpich)[^/\s]*\.so[.\d]*)$")
"""A line of /proc/self/maps that maps an MPI library (libmpi.so.40, libmpich.so.12)."""


def loaded_library_path() -> str | None:
    """The file of the MPI library mapped into this process, if any."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                match = _LOADED.search(line.rstrip("\n"))
                if match:
                    return match.group(1)
    except OSError:
        return None
    return None


def _library(path: str | None = None) -> ctypes.CDLL | None:
    for name in ([path] if path else [loaded_library_path(), None]):
        if name is None and path is None and loaded_library_path() is not None:
            continue
        try:
            lib = ctypes.CDLL(name)
            lib.MPI_T_init_thread  # noqa: B018  (raises AttributeError when absent)
        except (OSError, AttributeError):
            continue
        return lib
    return None


def _cvar_index(lib: ctypes.CDLL, name: str) -> int | None:
    index = ctypes.c_int()
    if lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index)) != MPI_SUCCESS:
        return None
    return index.value


def running_thread_level(lib: ctypes.CDLL) -> int:
    """The thread level MPI provides in this process (``MPI_Query_thread``), or single (0)
    before ``MPI_Init`` and after ``MPI_Finalize``."""
    initialized, finalized, level = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    if lib.MPI_Initialized(ctypes.byref(initialized)) != MPI_SUCCESS or not initialized.value:
        return 0
    if lib.MPI_Finalized(ctypes.byref(finalized)) != MPI_SUCCESS or finalized.value:
        return 0
    if lib.MPI_Query_thread(ctypes.byref(level)) != MPI_SUCCESS:
        return 0
    return level.value


@contextlib.contextmanager
def _session(library: str | None = None) -> Iterator[ctypes.CDLL | None]:
    """An initialised MPI_T of the loaded (or named) library, finalised after; None without.

    MPI_T is asked for the thread level MPI already runs at: Open MPI's first
    ``MPI_T_init_thread`` sets the level the process reports (``MPI_Query_thread``) to the one
    MPI_T asked for, so asking for single under a funneled MPI made the trace record
    ``single`` (issue 66), while the library kept its thread support on."""
    lib = _library(library)
    provided = ctypes.c_int()
    if lib is None or lib.MPI_T_init_thread(running_thread_level(lib),
                                            ctypes.byref(provided)) != MPI_SUCCESS:
        yield None
        return
    try:
        yield lib
    finally:
        lib.MPI_T_finalize()


@contextlib.contextmanager
def held_open() -> Iterator[bool]:
    """Keep one MPI_T session open around several calls of this module (yields whether MPI_T
    is available). MPICH 4.0 answers a second session, after the first was finalised, without
    descriptions or values: MPI_T_finalize at count zero drops its variable table."""
    with _session() as lib:
        yield lib is not None


def read_int_cvars(names: Iterable[str]) -> dict[str, int | None]:
    """The integer control variables ``names`` as the library holds them (None: unknown to
    it, or MPI_T unavailable)."""
    wanted = list(names)
    found: dict[str, int | None] = dict.fromkeys(wanted)
    with _session() as lib:
        if lib is None:
            return found
        for name in wanted:
            index = _cvar_index(lib, name)
            if index is None:
                continue
            handle, count = ctypes.c_void_p(), ctypes.c_int()
            if lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle),
                                           ctypes.byref(count)) != MPI_SUCCESS:
                continue
            value = ctypes.c_longlong(0)  # room for any integer type the variable has
            if count.value == 1 and lib.MPI_T_cvar_read(handle, ctypes.byref(value)) == 0:
                found[name] = int(ctypes.c_int.from_buffer(value).value)
            lib.MPI_T_cvar_handle_free(ctypes.byref(handle))
    return found


def _description(lib: ctypes.CDLL, index: int) -> str | None:
    name, desc = ctypes.create_string_buffer(256), ctypes.create_string_buffer(8192)
    name_len, desc_len = ctypes.c_int(256), ctypes.c_int(8192)
    verbosity, bind, scope = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    datatype, enumtype = ctypes.c_void_p(), ctypes.c_void_p()
    if lib.MPI_T_cvar_get_info(index, name, ctypes.byref(name_len), ctypes.byref(verbosity),
                               ctypes.byref(datatype), ctypes.byref(enumtype), desc,
                               ctypes.byref(desc_len), ctypes.byref(bind),
                               ctypes.byref(scope)) != MPI_SUCCESS:
        return None
    return desc.value.decode(errors="replace")


def descriptions(names: Iterable[str], library: str | None = None) -> dict[str, str]:
    """The descriptions of the control variables ``names`` that the library knows."""
    out: dict[str, str] = {}
    with _session(library) as lib:
        if lib is None:
            return out
        for name in names:
            index = _cvar_index(lib, name)
            text = None if index is None else _description(lib, index)
            if text is not None:
                out[name] = text
    return out


@contextlib.contextmanager
def written_int_cvars(values: dict[str, int]) -> Iterator[dict[str, int | None]]:
    """Set integer control variables for the duration of the block, restored after.

    Yields the value each variable had before (None: the library does not know it or refused
    the write, and it was left alone). MPICH reads its collective-selection variables at each
    call, so a write takes effect on the next collective of this process.
    """
    before: dict[str, int | None] = dict.fromkeys(values)
    with _session() as lib:
        if lib is None:
            yield before
            return
        handles: dict[str, ctypes.c_void_p] = {}
        try:
            for name, value in values.items():
                handle = _write_handle(lib, name)
                if handle is None:
                    continue
                handles[name] = handle
                old = ctypes.c_longlong(0)
                if lib.MPI_T_cvar_read(handle, ctypes.byref(old)) != MPI_SUCCESS:
                    continue
                if lib.MPI_T_cvar_write(handle, ctypes.byref(ctypes.c_int(value))) == 0:
                    before[name] = int(ctypes.c_int.from_buffer(old).value)
            yield before
        finally:
            for name, handle in handles.items():
                old_value = before[name]
                if old_value is not None:
                    lib.MPI_T_cvar_write(handle, ctypes.byref(ctypes.c_int(old_value)))
                lib.MPI_T_cvar_handle_free(ctypes.byref(handle))


def _write_handle(lib: ctypes.CDLL, name: str) -> ctypes.c_void_p | None:
    index = _cvar_index(lib, name)
    if index is None:
        return None
    handle, count = ctypes.c_void_p(), ctypes.c_int()
    if lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle),
                                   ctypes.byref(count)) != MPI_SUCCESS:
        return None
    if count.value != 1:
        lib.MPI_T_cvar_handle_free(ctypes.byref(handle))
        return None
    return handle
