"""Tables as HTML: the same markup pandas writes, every cell escaped."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ksptrace.studies.table import Table, html_table, map_cells


def _pandas(frame: pd.DataFrame, classes: list[str]) -> str:
    escaped = map_cells(frame, lambda c: html.escape(str(c)).replace("\n", "<br>"))
    escaped.columns = [html.escape(str(c)) for c in frame.columns]
    return str(escaped.to_html(index=False, escape=False, border=0, classes=classes, na_rep=""))


FRAMES = [
    pd.DataFrame({"a": [1, 2], "b c": ["x<y", "two\nlines"]}),
    pd.DataFrame({"<script>": ["&amp;", "\"q\""], "n": [1.5e-7, np.nan]}),
    pd.DataFrame({"long": ["é" * 300], "none": [None]}),
    pd.DataFrame({"empty": []}),
]


def test_the_table_is_pandas_markup_to_the_byte() -> None:
    for frame in FRAMES:
        assert html_table(frame, "data t-x") == _pandas(frame, ["data", "t-x"])


def test_a_table_escapes_its_cells_and_blanks_missing_values() -> None:
    t = Table("x", "X", pd.DataFrame({"m": [np.nan, 1.0], "<b>": ["<i>", None]}))
    out = t.to_html()
    assert "<i>" not in out
    assert "&lt;i&gt;" in out
    assert "&lt;b&gt;" in out
    assert "<td></td>" in out
    assert "nan" not in out
    assert "None" not in out
    expected = _pandas(t.frame.astype(object).where(t.frame.notna(), ""), ["data", "t-x"])
    assert out == expected


def test_blank_missing_values_are_those_pandas_finds_missing() -> None:
    """The frame's missing values (None, NaN, NaT, pd.NA, in every dtype) are blank, every
    other value written as before: the bytes of the frame blanked by pandas itself."""
    frame = pd.DataFrame({
        "f": [1.5, np.nan, -0.0, np.inf],
        "i": [1, 2, 3, 4],
        "b": [True, False, True, False],
        "o": ["x", None, np.nan, "<y>"],
        "t": pd.to_datetime(["2026-01-01", None, "2026-01-02", "2026-01-03"]),
        "n": pd.array([1, None, 3, 4], dtype="Int64"),
        "f32": np.array([0.1, np.nan, 2.5, 3.0], dtype=np.float32),
    })
    t = Table("x", "X", frame)
    blanked = frame.astype(object).where(frame.notna(), "")
    assert t.to_html() == html_table(blanked, "data t-x")
    assert t.to_html().count("<td></td>") == 6
