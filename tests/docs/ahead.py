"""The documents run two at a time, to keep the documentation test within the suite's time
(issue 31): when pytest reaches the first document's first block, every collected document
starts in a pool of two threads, each in its own copy of the repository (tests/docs/harness.py);
each block's test then waits for that block's outcome and reports it. The blocks of one document
still run one after the other, in order, as a reader would type them.

In a run of the whole suite the documents start beside the tests of tests/jobs/, which mostly
wait on Slurm's daemons and killed runs (conftest.py calls :func:`start` with ``early``): run
after all the tests, the documentation took 80 to 110 s of the suite. A document in LATE starts
only when pytest reaches it, after the tests that use what it uses."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import SkipTest

WORKERS = 2
LATE = ("cluster.md",)
"""Documents that start and stop the shared local cluster (scripts/cluster-local.sh): they must
not overlap tests/jobs/test_cluster_real.py, so they start when pytest reaches them."""
WAIT = 1500.0
"""Seconds a block's test waits for its document to get there."""

SELECTED: list[Path] = []
"""The documents pytest collected (conftest.py sets it); all of them when empty."""
_OUTCOMES: dict[tuple[str, int], tuple[str, str]] = {}
_FUTURES: dict[str, Future[None]] = {}
_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def _key(path: str | Path) -> str:
    return str(Path(path).resolve())


def _run_document(path: Path, parse: Callable[[Path], Any],
                  setup: Callable[[dict[str, Any]], None],
                  teardown: Callable[[dict[str, Any]], None]) -> None:
    document = parse(path)
    namespace = document.namespace
    namespace["mode"] = "run"
    try:
        setup(namespace)
        for example in document.examples():
            where = (_key(path), example.line)
            try:
                example.evaluate()
            except SkipTest as exc:
                _OUTCOMES[where] = ("skipped", str(exc))
            except AssertionError as exc:
                _OUTCOMES[where] = ("failed", str(exc))
            except Exception:  # the test reports it; the other blocks still run
                _OUTCOMES[where] = ("failed", traceback.format_exc(limit=4))
            else:
                _OUTCOMES[where] = ("passed", "")
    finally:
        if "work" in namespace:
            teardown(namespace)


def start(all_documents: Sequence[Path], parse: Callable[[Path], Any],
          setup: Callable[[dict[str, Any]], None],
          teardown: Callable[[dict[str, Any]], None], early: bool = False) -> None:
    """Start every document (the selected ones) not started yet, the longest first; with
    ``early``, all but the LATE ones."""
    global _POOL
    with _LOCK:
        chosen = SELECTED or list(all_documents)
        order = sorted(chosen, key=lambda p: (p.name != "README.md", p.name != "analysis.md",
                                              str(p)))
        todo = [p for p in order if _key(p) not in _FUTURES
                and not (early and p.name in LATE)]
        if not todo:
            return
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="docs")
        for path in todo:
            _FUTURES[_key(path)] = _POOL.submit(_run_document, path, parse, setup, teardown)


def outcome(path: str | Path, line: int) -> None:
    """Wait for a block and report it as its own: return, skip or fail."""
    future = _FUTURES.get(_key(path))
    if future is None:
        raise AssertionError(f"{path} was not started (tests/docs/ahead.py)")
    future.result(timeout=WAIT)  # a crash of the runner itself shows here
    kind, message = _OUTCOMES.get((_key(path), line), ("failed", f"{path}:{line} never ran"))
    if kind == "skipped":
        raise SkipTest(message)
    if kind == "failed":
        raise AssertionError(message)
