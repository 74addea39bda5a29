"""tests/docs/ahead.py: the documents start beside the tests, the LATE ones when reached."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.docs import ahead


class _Document:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {}

    def examples(self) -> list[Any]:
        return []


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """ahead's module state of its own (a whole-suite run's documents may be running)."""
    monkeypatch.setattr(ahead, "_FUTURES", {})
    monkeypatch.setattr(ahead, "_POOL", None)
    monkeypatch.setattr(ahead, "SELECTED", [])


def test_an_early_start_leaves_the_cluster_document_for_later(fresh: None) -> None:
    docs = [Path("/d/README.md"), Path("/d/docs/cluster.md"), Path("/d/docs/trace.md")]
    started: list[str] = []
    lock = threading.Lock()

    def parse(path: Path) -> _Document:
        with lock:
            started.append(path.name)
        return _Document()

    def nothing(namespace: dict[str, Any]) -> None:
        return None

    ahead.start(docs, parse, nothing, nothing, early=True)
    for future in list(ahead._FUTURES.values()):
        future.result(timeout=60)
    assert sorted(started) == ["README.md", "trace.md"]
    ahead.start(docs, parse, nothing, nothing)  # pytest reached a block of cluster.md
    ahead.start(docs, parse, nothing, nothing)  # and another: nothing starts twice
    for future in list(ahead._FUTURES.values()):
        future.result(timeout=60)
    assert sorted(started) == ["README.md", "cluster.md", "trace.md"]
