"""PETSc's tutorials, built once per session for the hook's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.hook import tutorials


@pytest.fixture(scope="session")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    why = tutorials.missing()
    if why is not None:
        pytest.fail(why)
    folder = tmp_path_factory.mktemp("tutorials")
    return {name: tutorials.build(name, folder) for name in tutorials.SOURCES}
