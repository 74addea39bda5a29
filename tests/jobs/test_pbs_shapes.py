"""What docs/campaigns.md says of PBS arrays that mix P = 1 and 2 (issue 67): one array asks
every subjob for the largest run's shape; ``nodes = 1`` gives each shape its own array."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ksptrace.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _selects(tmp_path: Path, extra: str) -> dict[str, str]:
    campaign = tmp_path / "tour.toml"
    campaign.write_text((ROOT / "examples" / "tour.toml").read_text() + extra)
    out = tmp_path / "out"
    assert main(["campaign", "run", str(campaign), "--backend", "pbs", "--dry-run",
                 "--out", str(out)]) == 0
    found = {}
    for script in sorted((out / "scripts" / "pbs").glob("*.pbs")):
        (select,) = re.findall(r"^#PBS -l select=(\S+)$", script.read_text(), re.MULTILINE)
        found[script.name] = select
    return found


def test_one_array_asks_every_subjob_for_the_largest_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _selects(tmp_path, "") == {"tour-N1.pbs": "1:ncpus=2:mpiprocs=2"}


def test_nodes_1_gives_each_shape_its_own_array(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _selects(tmp_path, "nodes = 1\n") == {"tour-N1-R1.pbs": "1:ncpus=1:mpiprocs=1",
                                                  "tour-N1-R2.pbs": "1:ncpus=2:mpiprocs=2"}
