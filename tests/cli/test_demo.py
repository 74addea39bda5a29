"""The demo's terminal table: one line per run, told apart by problem, n, solver and P."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ksptrace.cli.demo import format_table


def row(n: int, ksp: str, p: int, **extra: Any) -> dict[str, Any]:
    return dict(problem="laplace1d", n=n, ksp=ksp, nprocs=p, iterations=1000, solve_max=0.25,
                sum_max_iteration=0.2, mean_iteration=2e-4, rank_spread=1e-3, **extra)


def test_runs_that_differ_only_in_n_are_told_apart_and_sorted_by_it() -> None:
    lines = format_table([row(100_000, "bcgs", 1), row(10_000, "bcgs", 1),
                          row(30_000, "bcgs", 1)]).splitlines()
    assert lines[0].split()[:3] == ["problem", "n", "solver"]
    assert [line.split()[1] for line in lines[2:]] == ["10000", "30000", "100000"]
    assert "noise" not in lines[0]


def test_the_noise_column_appears_only_with_noise() -> None:
    text = format_table([row(10_000, "gmres", 2), row(10_000, "gmres", 2, noise="fixed:value=1ms")])
    assert text.splitlines()[0].endswith("noise")
    assert sorted(line.split()[-1] for line in text.splitlines()[2:]) == [
        "fixed:value=1ms", "none"]


def test_the_demo_with_its_paired_design_ends_within_max_lines() -> None:
    """The paired noise campaign's table (8 lines) came after the 25 lines of the summary."""
    from ksptrace.cli.demo import closing_lines
    from ksptrace.report.terminal import MAX_LINES

    summary = [f"line {i}" for i in range(40)]
    noise = ["", "Injected noise ...", *[f"row {i}" for i in range(6)]]
    index = Path("demo-out/index.html")
    shown = closing_lines(summary, ["segment"], noise, paired=True, index=index)
    assert len(shown) == MAX_LINES
    assert shown[-2:] == ["segment", "everything the demo wrote, one page: demo-out/index.html"]
    unpaired = closing_lines(summary, ["segment"], noise, paired=False, index=index)
    assert unpaired[-len(noise):] == noise
