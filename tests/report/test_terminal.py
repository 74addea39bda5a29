"""The demo's terminal summary: at most 25 lines for the demo's 32 runs, the answers first, then
one sorted line per (problem, n, P) with every solver, the fastest marked (issue 30)."""

from __future__ import annotations

import itertools
from typing import Any

from ksptrace.report.terminal import MAX_LINES, summary_lines, table_lines

SOLVERS = ("gmres", "pgmres", "bcgs", "pipebcgs")
CONFIGS = (("laplace1d", 100000), ("laplace1d", 10000), ("iceflow", 60000), ("laplace1d", 30000))


def _digest() -> dict[str, Any]:
    traces = []
    for (problem, n), ksp, p in itertools.product(CONFIGS, SOLVERS, (2, 1)):
        seconds = 1e-3 * (n / 1e4) * (1.0 + SOLVERS.index(ksp) / 10) / p
        traces.append({"problem": problem, "n": n, "ksp": ksp, "nprocs": p,
                       "kspsolve": seconds, "headline_error_pct": -1.5,
                       "caveats": ["machine-loaded"] if p == 2 else []})
    long = "a sentence with the number 12 % " * 8
    answers = [{"key": k, "question": f"Question {k}?", "sentences": [long, "second"]}
               for k in ("variability", "pipelined", "models", "fastest")]
    # the report's ranking rests on the clean runs (P = 1 here): gmres wins each of those
    fastest = {"basis": "16 clean runs; 16 flagged runs left out", "configurations": [
        {"problem": problem, "n": n, "nprocs": 1, "fastest": "GMRES", "cannot_tell": []}
        for problem, n in CONFIGS]}
    return {"traces": traces, "answers": answers, "fastest": fastest}


def test_the_demo_summary_fits_25_lines_with_n_and_p_sorted() -> None:
    lines = summary_lines(_digest(), "demo-out/report/report.html")
    assert len(lines) <= MAX_LINES
    assert "32 runs (16 with a caveat" in lines[0]
    assert all(len(line) <= 120 for line in lines)
    assert [line[:2] for line in lines[1:] if line[:1].isdigit()] == ["1.", "2.", "3.", "4."]
    assert "second" not in "\n".join(lines)  # the first sentence of each answer only
    table = lines[lines.index(next(ln for ln in lines if ln.startswith("problem"))) + 1:]
    keys = [(ln.split()[0], int(ln[11:20].replace(" ", "")), int(ln[20:24])) for ln in table]
    assert keys == sorted(keys)
    assert len(keys) == 8  # (problem, n) x P
    assert keys[0] == ("iceflow", 60000, 1)
    # gmres is the fastest of the clean runs (P = 1): one mark per such line; the loaded P = 2
    # lines get none, every cell marked loaded; each with the model's signed error.
    assert all(ln.count("*") == (ln[20:24].strip() == "1") and "(-2 %)" in ln for ln in table)
    assert all(ln.count("!") == 4 * (ln[20:24].strip() == "2") for ln in table)


def test_a_table_longer_than_its_room_says_how_many_rows_are_left_out() -> None:
    traces = [{"problem": "p", "n": n, "ksp": "cg", "nprocs": 1, "kspsolve": 1.0}
              for n in range(1, 40)]
    lines = table_lines(traces, 10)
    assert len(lines) == 10
    assert lines[-1].startswith("... 31 more configurations in table1_models.csv (p n = 9, ")
    # issue 63: never rows dropped silently, whatever the room
    for limit in (0, 1, 2, 3):
        cut = table_lines(traces, limit)
        assert len(cut) <= max(limit, 1)
        assert cut[-1].startswith("... ")


def test_a_run_with_injected_noise_does_not_stand_for_its_configuration() -> None:
    """Issue 52: the demo's paired noise runs share (problem, n, P) with noise-free ones."""
    noisy = {"problem": "laplace1d", "n": 20000, "nprocs": 2, "ksp": "gmres",
             "kspsolve": 26.4, "caveats": ["with injected noise"]}
    quiet = {**noisy, "kspsolve": 1.5, "caveats": []}
    (_, row) = table_lines([noisy, quiet], 10)
    assert "1.5 s" in row
    assert "26.4" not in row
