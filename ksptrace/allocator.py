"""glibc's allocator, told to keep the memory an analysis frees for the next array.

numpy takes every array of more than a few hundred bytes from ``malloc``. glibc serves a block
of 128 KiB or more (adjusting upwards as such blocks are freed) by ``mmap`` of fresh pages and
returns it to the kernel on ``free``; the worker threads' arenas give their free tops back with
``madvise``. Each new block then costs a page fault per 4 KiB the first time it is written. An
analysis of a paper-scale trace (8192 x 5000 values) makes millions of such blocks, one per
chunk of a histogram or a KS merge: about 270,000 faults and 2 s of system time.

:func:`keep_freed_memory` sets two ``mallopt`` parameters for the process: blocks below 32 MiB
(glibc's largest threshold) come from the heap, and up to 1 GiB of free heap is kept rather than
trimmed. Arrays of 32 MiB and more are still mapped and unmapped as before, so the peak memory
grows by at most the blocks in use at one time. Nothing is computed differently: the same
numbers, with less time in the kernel (bench/analysis_throughput.py, docs/analysis.md).

A user who set any ``MALLOC_*_`` variable chose for themselves: then nothing is changed. Off
glibc (macOS, musl) there is no ``mallopt`` to call, and nothing is changed either.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter numbers (malloc.h)."""
MMAP_THRESHOLD = 32 * 1024 * 1024
"""The largest value glibc accepts on 64-bit machines (HEAP_MAX_SIZE / 2)."""
TRIM_THRESHOLD = 1024 * 1024 * 1024
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                 "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES")


def keep_freed_memory() -> bool:
    """Set glibc's thresholds as the module says; True when both were set. Call it once, early,
    in a process that analyses traces (workers forked later inherit it)."""
    if any(name in os.environ for name in USER_SETTINGS):
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
