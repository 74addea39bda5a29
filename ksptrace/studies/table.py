"""The table every study reports in: a frame for CSV and JSON, a display frame for HTML.

Shared by all studies (a declared shared module: see docs/architecture.md).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True, eq=False)
class Table:
    """A titled table: ``frame`` for CSV and JSON, ``display`` (text cells) for HTML."""

    name: str
    """File-name stem of the CSV."""
    title: str
    frame: pd.DataFrame
    display: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()

    def records(self) -> list[dict[str, Any]]:
        """Rows as dicts, NaN as None (for summary.json)."""
        clean = self.frame.astype(object).where(self.frame.notna(), None)
        return [{k: _plain(v) for k, v in row.items()} for row in clean.to_dict("records")]

    def to_csv(self) -> str:
        return str(self.frame.to_csv(index=False, lineterminator="\n"))

    def to_html(self) -> str:
        """The display frame (or the frame, missing values blank) as an HTML table, every cell
        escaped here."""
        if self.display is not None:
            return html_table(self.display, f"data t-{self.name}")
        return html_table(self.frame, f"data t-{self.name}", blank_missing=True)

    @property
    def empty(self) -> bool:
        return self.frame.empty


def _cell(value: Any) -> str:
    return html.escape(str(value)).replace("\n", "<br>")


def _missing(value: Any) -> bool:
    """What ``DataFrame.notna`` calls missing: None, NaN, NaT, pd.NA (a scalar cell)."""
    return value is None or value is pd.NA or value is pd.NaT or (
        isinstance(value, float | np.floating) and value != value)


def html_table(frame: pd.DataFrame, classes: str, blank_missing: bool = False) -> str:
    """``frame`` as the HTML table ``DataFrame.to_html(index=False, border=0)`` writes, every
    cell and heading escaped (``<br>`` for a line break); a tenth of pandas' time, which was a
    fifth of a 1,000-trace report's writing (issue 35). With ``blank_missing``, a missing value
    is an empty cell (as ``frame.where(frame.notna(), "")`` would give, without building it)."""
    head = "".join(f"      <th>{_cell(c)}</th>\n" for c in frame.columns)

    def cell(v: Any) -> str:
        return "" if blank_missing and _missing(v) else _cell(v)

    rows = "".join(
        "    <tr>\n" + "".join(f"      <td>{cell(v)}</td>\n" for v in row) + "    </tr>\n"
        for row in frame.itertuples(index=False, name=None))
    return (f'<table class="dataframe {classes}">\n  <thead>\n'
            f'    <tr style="text-align: right;">\n{head}    </tr>\n  </thead>\n'
            f"  <tbody>\n{rows}  </tbody>\n</table>")


def map_cells(frame: pd.DataFrame, fn: Callable[[Any], str]) -> pd.DataFrame:
    """``fn`` on every cell (DataFrame.map in pandas >= 2.1, applymap before)."""
    mapper = getattr(frame, "map", None) or frame.applymap
    return pd.DataFrame(mapper(fn))


def significant(v: Any) -> str:
    """A numeric cell as a page shows it: 3 significant digits below 1000, rounded to a whole
    number from 1000 on (byte sizes, microseconds; never 1.2e+03), blank for a missing value."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, float):
        return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return str(v)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v
