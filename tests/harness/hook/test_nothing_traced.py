"""``ksptrace trace``'s words when it writes fewer traces than KSPs (issue 67): the files of the
traces made are numbered without gaps, and a run that leaves no trace says why in its own line
(a --ksp-prefix that selects nothing is named as the reason)."""

from __future__ import annotations

from ksptrace.harness.hook import records
from ksptrace.harness.hook.assemble import assemble
from ksptrace.harness.hook.session import Outcome, nothing_traced
from tests.harness.hook.test_records import END, header, skipped, solve


def test_the_traces_made_are_numbered_without_a_gap() -> None:
    body = (header(0, 1) + solve(0, [1.0, 1.1], [2.0, 1.0], comm=1, prefix="a_")
            + solve(1, [2.0], [3.0], comm=1, prefix="b_")  # no iteration: no trace
            + solve(2, [3.0, 3.1, 3.2], [4.0, 2.0, 1.0], comm=1, prefix="c_") + END)
    got = assemble([records.parse(body)], {})
    assert [name for name, _ in got.traces] == ["a-ksp0", "c-ksp1"]


def test_a_prefix_that_selects_nothing_is_the_reason_given() -> None:
    body = header(0, 1) + skipped(-1, 3, 1, "outer_") + END
    assembled = assemble([records.parse(body)], {})
    assert assembled.traces == ()
    outcome = Outcome((), assembled, 0, ("", "outer_"))
    assert nothing_traced(outcome, "inner_") == (
        "no KSP has the options prefix 'inner_' (the program's KSPs have '', 'outer_'); give "
        "--ksp-prefix one of those")


def test_otherwise_what_was_left_out_is_in_the_same_line() -> None:
    body = header(0, 1) + skipped(-1, 3, 2, "sub_") + END
    assembled = assemble([records.parse(body)], {})
    outcome = Outcome((), assembled, 0, ("sub_",))
    for prefix in (None, "sub_"):
        assert nothing_traced(outcome, prefix) == (
            "no solve had an iteration to trace (3 nested solves of KSP preonly (prefix sub_) "
            "at depth 2)")
