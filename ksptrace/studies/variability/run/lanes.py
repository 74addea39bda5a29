"""Independent steps of one large trace's analysis, run on the second core (issue 35).

At paper scale (8192 ranks x 5000 iterations) the bulk fits, the node variances over all kept
iterations, the wait penalty and the noise summary take 0.6 to 0.8 s each, one after the other,
while the KS tests run. None of them reads another's result, and each is a pure function of
arrays that nobody writes, so they can run in threads beside the KS tests: numpy and scipy
release the interpreter lock inside their array loops. Every step computes exactly what it did in
turn (each draws from its own seeded generator), so the numbers are the same bits. The steps
that need nothing the analysis computes (node variances, noise summary, the lockstep and
rank-sum totals, the variance split) start first, beside the uniform fits and the sort of each
rank's times; the bulk fits and the wait penalty, which count on the sorted rows, after it.

Small traces gain nothing (a thread costs more than a demo trace's steps), and a worker of
``analyze --jobs N`` leaves the other cores to the other workers; so there, and below
PARALLEL_ELEMENTS values, a step runs when its result is first asked for, in the order the
analysis asks: the same order, and the same first error, as without lanes.

Only the bulk fits use scipy.stats' warnings filter (process-wide): the analysis asks for their
result before it fits anything else, so no two fits overlap.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

PARALLEL_ELEMENTS = 4_000_000
"""Traces with at least this many iteration times run their independent steps in threads
(about 0.2 s of work per step at this size; below it a step takes a few milliseconds)."""
SIDE_WORKERS = 2 if (os.cpu_count() or 1) > 1 else 0
"""Threads for the side steps (none on one core); the KS tests have threads of their own
(ks.DEFAULT_WORKERS)."""


class Later(Generic[T]):
    """The result of one step: computed in a thread already, or on the first ``result()``."""

    def __init__(self, step: Callable[[], T], future: Future[T] | None) -> None:
        self._step: Callable[[], T] | None = step
        self._future = future
        self._value: T | None = None
        self._done = False

    def result(self) -> T:
        """The step's value; its exception, raised here, if it failed."""
        if self._future is not None:
            return self._future.result()
        if not self._done:
            assert self._step is not None
            self._value = self._step()
            self._done = True
            self._step = None
        return self._value  # type: ignore[return-value]


class Lanes:
    """Steps handed over with :meth:`later`; a context that waits for every started step."""

    def __init__(self, elements: int, workers: int = SIDE_WORKERS) -> None:
        parallel = (elements >= PARALLEL_ELEMENTS and workers > 0
                    and multiprocessing.parent_process() is None)  # not a worker of --jobs N
        self._pool = ThreadPoolExecutor(workers, "ksptrace-lane") if parallel else None

    @property
    def parallel(self) -> bool:
        return self._pool is not None

    def later(self, step: Callable[..., T], *args: object) -> Later[T]:
        """``step(*args)``: started now in a thread (large traces) or run when first asked."""
        def call() -> T:
            return step(*args)

        return Later(call, None if self._pool is None else self._pool.submit(call))

    def __enter__(self) -> Lanes:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._pool is not None:
            # an error or Ctrl-C: steps not started are dropped, running ones end first
            self._pool.shutdown(wait=True, cancel_futures=True)
