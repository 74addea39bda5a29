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
