"""What the report copies of a trace's attributes is capped (issue 67: a 20 MB noise attribute
made a 77 MB report)."""

from __future__ import annotations

import json
from pathlib import Path

from ksptrace.cli.main import main
from ksptrace.studies.variability.run.shown import MAX_TEXT, capped, shown_attrs
from ksptrace.trace.model import Trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

BIG = 2_000_000


def test_long_text_is_cut_with_its_length_and_long_values_stay_apart() -> None:
    assert capped("x" * MAX_TEXT) == "x" * MAX_TEXT
    assert capped(3.5) == 3.5
    a, b = capped("x" * BIG + "a"), capped("x" * BIG + "b")
    assert isinstance(a, str)
    assert len(a) < MAX_TEXT
    assert f"({BIG + 1:,} characters, sha256 " in a
    assert a != b
    assert shown_attrs({"n": 10, "k" * BIG: "v"})[0][1] == "v"


def test_a_huge_attribute_does_not_swell_the_report(tmp_path: Path) -> None:
    src = synthetic_trace(4, 40, 2, "gmres", seed=1)
    noise = "fixed:value=1ms" + "x" * BIG  # not a spec: the note quotes it too
    trace = Trace(src.stamps, src.residual_norms, src.node_ids, src.hostnames,
                  src.solve_seconds, {**src.attrs, "noise": noise, "comment": "y" * BIG})
    path = write_trace(trace, tmp_path / "t.h5")
    out = tmp_path / "report"
    assert main(["analyze", str(path), "--out", str(out), "--no-figures", "--no-cache",
                 "--quiet", "--candidates", "norm", "--mc-runs", "1"]) == 0
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert size < BIG / 4, f"the report is {size:,} bytes"
    digest = (out / "summary.json").read_text()
    json.loads(digest)
    assert f"({len(noise):,} characters, sha256 " in digest  # named, cut
    assert "x" * 1000 not in digest
