"""The terminal table keeps its columns for a problem name longer than the column (issue 67:
``poisson2d-timeloop    4 096   2`` under ``problem            n   P``)."""

from __future__ import annotations

from ksptrace.report.terminal import table_lines


def test_a_long_problem_name_widens_the_column_and_the_columns_stay_aligned() -> None:
    traces = [{"problem": name, "n": 4096, "ksp": "cg", "nprocs": 2, "kspsolve": 2e-3}
              for name in ("poisson2d-timeloop", "p")]
    head, *rows = table_lines(traces, 10)
    assert len(rows) == 2
    for row in rows:  # n and P right-aligned under their headings, the solver's cell below it
        assert row[head.index(" n") + 1] == "6"
        assert row[head.index(" P") + 1] == "2"
        assert row[head.index("cg"):].startswith("2 ms")
