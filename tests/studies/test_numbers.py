"""Numbers in prose (issue 63): no e-notation ("6.52e+03 µs"), the unit chosen after rounding,
negative times in the unit of their size, ratios with at most four significant digits
("1.00014 ×" was six)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ksptrace.report.terminal import _time as terminal_time
from ksptrace.studies.noise import paired
from ksptrace.studies.noise.blocks import _times
from ksptrace.studies.numbers import ratio_range, seconds_text, significant
from ksptrace.studies.variability.conclusions.findings import fmt_time
from ksptrace.studies.variability.conclusions.reasons import _ms
from ksptrace.studies.variability.run.flags import _t

FORMATTERS = (fmt_time, _t, terminal_time, _ms)
E_NOTATION = re.compile(r"\de[+-]?\d")
VALUES = [s * m * 10.0**e for e in range(-6, 5) for m in (1.0, 1.234567, 6.52, 9.99996)
          for s in (1, -1)]


@pytest.mark.parametrize("fmt", FORMATTERS)
def test_no_time_is_printed_in_e_notation_or_in_a_unit_it_outgrew(fmt: object) -> None:
    for v in VALUES:
        text = fmt(v)  # type: ignore[operator]
        assert not E_NOTATION.search(text), (v, text)
        number = float(re.sub(r"[^\d.]", "", text.split()[0]))
        assert number < 1000 or text.endswith(" s"), (v, text)  # 1 ms, never 1000 µs


def test_the_reported_cases_read_plainly() -> None:
    """The report's "6.52e+03 µs" was a negative 6.52 ms formatted below 1 ms."""
    for fmt in FORMATTERS:
        assert fmt(-6.52e-3) == "-6.52 ms"
        assert fmt(6.52e-3) == "6.52 ms"
        assert fmt(0.99996e-3) == "1 ms"
    assert fmt_time(12345.0) == "12340 s"
    assert seconds_text(2e-7) is None  # the caller says it in ns
    assert fmt_time(2.3e-7) == "230 ns"


def test_ratios_never_show_more_than_four_significant_digits() -> None:
    rng = np.random.default_rng(3)
    for _ in range(2000):
        est = 1.0 + 10.0 ** rng.uniform(-8, 0.5)
        half = abs(est - 1.0) * rng.uniform(0.01, 1.0)
        text = ratio_range(est, est - half, est + half, "K·mean")
        assert not E_NOTATION.search(text), text
        for number in re.findall(r"\d[\d.]*", text):
            assert len(number.replace(".", "").lstrip("0")) <= 4, text
    assert _times(paired.Interval(1.00014, 1.0001, 1.0002)) == (
        "K·mean + 0.014 % (blocks +0.010 % to +0.020 %)")
    assert significant(150.3, 2) == "150"
    assert significant(0.4848, 2) == "0.48"
