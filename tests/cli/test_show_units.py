"""``ksptrace show`` gives every time its unit and says what each summary figure is, so that
sum_max_iteration above solve_max reads as what it is (issue 67)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ksptrace.cli.display import NOTES
from ksptrace.cli.main import main
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace


def _shown(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, str]:
    src = synthetic_trace(4, 30, 2, "pgmres", seed=1)
    trace = Trace(src.stamps, src.residual_norms, src.node_ids, src.hostnames,
                  src.solve_seconds, {**src.attrs, "setup_max": 0.00110744})
    path = write_trace(trace, tmp_path / "t.h5")
    assert main(["show", str(path), *flags]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    return {line.split()[0]: line.split(None, 1)[1] for line in lines if line.strip()}


def test_times_carry_their_unit_and_summary_figures_say_what_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = _shown(tmp_path, capsys)
    assert shown["setup_max"].startswith("1.107 ms ")
    for key in ("solve_max", "sum_max_iteration", "max_sum_iteration", "mean_iteration",
                "rank_spread"):
        assert re.match(r"[\d.]+ (s|ms|µs|ns) ", shown[key]), shown[key]
        assert shown[key].endswith(NOTES[key])
    assert "slowest" in shown["sum_max_iteration"]


def test_every_attribute_that_is_a_time_has_a_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = _shown(tmp_path, capsys, "--all")
    bare = {k: v for k, v in shown.items()
            if re.search(r"(_max|_min|_mean|_seconds|_iteration|_spread)$", k)
            and re.fullmatch(r"-?[\d.]+(e-?\d+)?", v)}
    assert not bare
