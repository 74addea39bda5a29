"""What ``ksptrace show`` and ``ksptrace run`` print for a trace's numbers (issue 31: raw
floats without units, and a forced run that read as DIVERGED_MAX_IT)."""

from __future__ import annotations

import pytest

from ksptrace.cli.display import display_value, seconds, stop_reason


@pytest.mark.parametrize(("value", "text"), [
    (2.5, "2.5 s"), (0.001831, "1.831 ms"), (3.33663e-05, "33.37 µs"), (4.4e-9, "4.4 ns"),
    (0.0, "0 s"), (float("nan"), "nan"),
])
def test_seconds_take_the_unit_that_suits_them(value: float, text: str) -> None:
    assert seconds(value) == text


def test_a_forced_run_says_its_k_iterations_were_done() -> None:
    assert stop_reason("DIVERGED_MAX_IT", {"iterations": 50}) == (
        "K = 50 iterations done (forced; PETSc: DIVERGED_MAX_IT)")
    # a recorded program's solve that hit its own max_it did diverge, as PETSc says
    assert stop_reason("DIVERGED_MAX_IT", {"recorded": True}) == "DIVERGED_MAX_IT"
    assert stop_reason("DIVERGED_BREAKDOWN", {"iterations": 50}) == "DIVERGED_BREAKDOWN"


def test_show_gives_times_shares_and_loads_their_units() -> None:
    attrs = {"iterations": 50}
    assert display_value("mean_iteration", 3.33663e-05, attrs) == "33.37 µs"
    assert display_value("foreign_cpu_share", 0.240537834545672, attrs) == "24.1 %"
    assert display_value("loadavg_before", 2.27001953125, attrs) == "2.27"
    assert display_value("converged_reason", "DIVERGED_MAX_IT", attrs).startswith("K = 50")
    assert display_value("nnz", 5998, attrs) == "5998"
    assert display_value("oversubscribed", False, attrs) == "False"
