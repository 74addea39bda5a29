"""Periodic test patterns for message buffers, filled and compared without large temporaries.

Every pattern a collective sends is periodic in the element index (``(31 i + c) mod 251``,
``i mod 7``), so one period is computed and then copied into the buffer by doubling: the buffer
itself is the only large allocation. Computing the pattern over ``np.arange(n, dtype=int64)``
took 16 bytes of temporaries per message byte (a 1 GiB message: 17 GiB on one rank). Comparing
a buffer with the expected one goes by chunks of :data:`CHUNK` elements, so that the boolean
array ``np.array_equal`` would build is bounded as well. Pure numpy.
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 22
"""Elements compared at a time (a 4 MiB boolean temporary)."""
CHECK_BYTES = CHUNK + (1 << 20)
"""The temporaries of :func:`first_difference` and of a fill, in bytes, with room for small
change (the memory check adds it to the buffers)."""


def tile_into(out: np.ndarray, period: np.ndarray) -> None:
    """Fill the 1-d ``out`` with ``period`` repeated: ``out[i] = period[i % len(period)]``."""
    count = out.size
    done = min(count, period.size)
    out[:done] = period[:done]
    while done < count:  # out[:done] holds whole periods (or all of out): copy it forward
        step = min(done, count - done)
        out[done:done + step] = out[:step]
        done += step


def tiled(period: np.ndarray, count: int) -> np.ndarray:
    """``count`` elements repeating ``period``."""
    out = np.empty(count, dtype=period.dtype)
    tile_into(out, period)
    return out


def byte_period(multiplier: int, offset: int) -> np.ndarray:
    """One period (251 bytes) of the uint8 pattern ``(multiplier * i + offset) % 251``."""
    return ((np.arange(251, dtype=np.int64) * multiplier + offset) % 251).astype(np.uint8)


def byte_pattern(nbytes: int, multiplier: int, offset: int) -> np.ndarray:
    """uint8 ``(multiplier * i + offset) % 251`` for i < ``nbytes`` (never 251..255)."""
    return tiled(byte_period(multiplier, offset), nbytes)


def first_difference(got: np.ndarray, expected: np.ndarray) -> int | None:
    """The first index where ``got`` and ``expected`` differ (None: equal; shapes must match)."""
    if got.shape != expected.shape:
        raise ValueError(f"compared arrays differ in shape: {got.shape}, {expected.shape}")
    for start in range(0, got.size, CHUNK):
        a, b = got[start:start + CHUNK], expected[start:start + CHUNK]
        if not np.array_equal(a, b):
            return start + int(np.argmax(a != b))  # not flatnonzero: 8 bytes a difference
    return None
