"""Reading the MPI library's control variables back through the MPI tool interface (MPI_T).

mpi4py 3.1 does not wrap MPI_T, so the C functions are called through ctypes from the MPI
library mpi4py loaded (globally, so its symbols are visible to ``ctypes.CDLL(None)``). This is
how a run shows the algorithm the library *holds*, not only the variable that asked for it:
Open MPI keeps an enum variable at its default when given a value it does not know (and says
so only in a help message that its launcher may lose). Call after MPI_Init.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterable

MPI_SUCCESS = 0


def _library() -> ctypes.CDLL | None:
    for name in (None, ctypes.util.find_library("mpi")):
        try:
            lib = ctypes.CDLL(name)
            lib.MPI_T_init_thread  # noqa: B018  (raises AttributeError when absent)
        except (OSError, AttributeError):
            continue
        return lib
    return None


def read_int_cvars(names: Iterable[str]) -> dict[str, int | None]:
    """The integer control variables ``names`` as the library holds them (None: unknown to
    it, or MPI_T unavailable)."""
    wanted = list(names)
    found: dict[str, int | None] = dict.fromkeys(wanted)
    lib = _library()
    if lib is None:
        return found
    provided = ctypes.c_int()
    if lib.MPI_T_init_thread(0, ctypes.byref(provided)) != MPI_SUCCESS:
        return found
    try:
        for name in wanted:
            index = ctypes.c_int()
            if lib.MPI_T_cvar_get_index(name.encode(), ctypes.byref(index)) != MPI_SUCCESS:
                continue
            handle, count = ctypes.c_void_p(), ctypes.c_int()
            if lib.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle),
                                           ctypes.byref(count)) != MPI_SUCCESS:
                continue
            value = ctypes.c_longlong(0)  # room for any integer type the variable has
            if count.value == 1 and lib.MPI_T_cvar_read(handle, ctypes.byref(value)) == 0:
                found[name] = int(ctypes.c_int.from_buffer(value).value)
            lib.MPI_T_cvar_handle_free(ctypes.byref(handle))
    finally:
        lib.MPI_T_finalize()
    return found
