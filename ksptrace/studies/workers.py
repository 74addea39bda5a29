"""Forked worker processes that leave quietly on Ctrl-C: the analysis' pools (issue 35).

A terminal's Ctrl-C reaches every process of the command. A worker of a
``ProcessPoolExecutor`` that is waiting for work would print a KeyboardInterrupt traceback, and
one killed by it breaks the pool while the parent cancels what it had queued, which Python 3.11
reports from a thread as ``InvalidStateError``. So the workers of :func:`forked_pool` ignore
SIGINT, and the parent, which says "interrupted", stops them itself: it kills them, cancelling
nothing, and waits for the pool to wind down. Their unfinished work is abandoned; the results
of finished work were already taken.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context


def _start(initializer: Callable[[], None] | None) -> None:
    """In each worker: leave Ctrl-C to the parent, then the pool's own initializer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer()


def start_pool(workers: int, initializer: Callable[[], None] | None = None
               ) -> ProcessPoolExecutor:
    """A pool of ``workers`` forked processes that ignore SIGINT (see :func:`stop`)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"),
                               initializer=_start, initargs=(initializer,))


def stop(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers, abandoning their work, and wait until the pool has wound down.

    Nothing is cancelled: a cancelled task of a pool its workers' deaths break makes Python
    3.11 raise in the pool's thread. The processes are the executor's own (it has no public
    handle on them); the pool is then shut down as usual."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(ProcessLookupError, ValueError, AttributeError):
            process.kill()
    pool.shutdown(wait=True)


@contextlib.contextmanager
def forked_pool(workers: int, initializer: Callable[[], None] | None = None
                ) -> Iterator[ProcessPoolExecutor]:
    """:func:`start_pool` as a context: shut down when the block ends, stopped (:func:`stop`)
    when it ends with an error or Ctrl-C."""
    pool = start_pool(workers, initializer)
    try:
        yield pool
    except BaseException:
        stop(pool)
        raise
    pool.shutdown(wait=True)
