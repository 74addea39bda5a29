"""The table every study reports in: a frame for CSV and JSON, a display frame for HTML.

Shared by all studies (a declared shared module: see docs/architecture.md). A table is given
pandas frames, or rows (:class:`~ksptrace.studies.rows.Rows`) that it writes out without
importing pandas, and turns into frames only when :attr:`Table.frame` is asked for.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ksptrace.studies.rows import Rows

if TYPE_CHECKING:
    import pandas as pd


def frame_of(data: pd.DataFrame | Rows) -> pd.DataFrame:
    """``data`` as a pandas frame: ``pd.DataFrame(rows, columns)`` for rows."""
    if not isinstance(data, Rows):
        return data
    import pandas as pd

    return pd.DataFrame(list(data.rows), columns=None if data.columns_given is None
                        else list(data.columns_given))


def _plain_rows(data: pd.DataFrame | Rows | None) -> Rows | None:
    return data if isinstance(data, Rows) and data.plain else None


@dataclass(frozen=True, eq=False, init=False)
class Table:
    """A titled table: ``frame`` for CSV and JSON, ``display`` (text cells) for HTML, each
    given as a pandas frame or as :class:`Rows` (``data`` and ``shown`` hold what was given)."""

    name: str
    """File-name stem of the CSV."""
    title: str
    data: pd.DataFrame | Rows
    shown: pd.DataFrame | Rows | None
    notes: tuple[str, ...]

    def __init__(self, name: str, title: str, frame: pd.DataFrame | Rows | None = None,
                 display: pd.DataFrame | Rows | None = None, notes: tuple[str, ...] = (), *,
                 data: pd.DataFrame | Rows | None = None,
                 shown: pd.DataFrame | Rows | None = None) -> None:
        given = frame if frame is not None else data
        if given is None:
            raise TypeError(f"table {name!r} needs a frame or rows")
        for key, value in (("name", name), ("title", title), ("data", given),
                           ("shown", display if display is not None else shown),
                           ("notes", tuple(notes))):
            object.__setattr__(self, key, value)

    @property
    def frame(self) -> pd.DataFrame:
        """The data as a pandas frame (made from the rows at the first call)."""
        cached = self.__dict__.get("_frame")
        if cached is None:
            cached = frame_of(self.data)
            object.__setattr__(self, "_frame", cached)
        return cached

    @property
    def display(self) -> pd.DataFrame | None:
        if self.shown is None:
            return None
        cached = self.__dict__.get("_display")
        if cached is None:
            cached = frame_of(self.shown)
            object.__setattr__(self, "_display", cached)
        return cached

    def records(self) -> list[dict[str, Any]]:
        """Rows as dicts, NaN as None (for summary.json)."""
        rows = _plain_rows(self.data)
        if rows is not None:
            return rows.records()
        clean = self.frame.astype(object).where(self.frame.notna(), None)
        return [{k: _plain(v) for k, v in row.items()} for row in clean.to_dict("records")]

    def to_csv(self) -> str:
        rows = _plain_rows(self.data)
        if rows is not None:
            return rows.to_csv()
        return str(self.frame.to_csv(index=False, lineterminator="\n"))

    def to_html(self) -> str:
        """The display frame (or the frame, missing values blank) as an HTML table, every cell
        escaped here."""
        classes = f"data t-{self.name}"
        if self.shown is not None:
            rows = _plain_rows(self.shown)
            if rows is not None:
                return _html(rows.columns, rows.cells(), classes)
            display = self.display
            assert display is not None
            return html_table(display, classes)
        rows = _plain_rows(self.data)
        if rows is not None:
            return _html(rows.columns, rows.cells(), classes, blank_missing=True)
        return html_table(self.frame, classes, blank_missing=True)

    @property
    def empty(self) -> bool:
        return self.data.empty

    @property
    def shows_nothing(self) -> bool:
        """No rows to show: the data or the display is empty."""
        return bool(self.empty or (self.shown is not None and self.shown.empty))


def _cell(value: Any) -> str:
    return html.escape(str(value)).replace("\n", "<br>")


def _missing(value: Any) -> bool:
    """What ``DataFrame.notna`` calls missing: None, NaN, NaT, pd.NA (a scalar cell)."""
    if value is None or (isinstance(value, float | np.floating) and value != value):
        return True
    if type(value).__module__.startswith("pandas"):  # only where pandas made the cell
        import pandas as pd

        return value is pd.NA or value is pd.NaT
    return False


def html_table(frame: pd.DataFrame, classes: str, blank_missing: bool = False) -> str:
    """``frame`` as the HTML table ``DataFrame.to_html(index=False, border=0)`` writes, every
    cell and heading escaped (``<br>`` for a line break); a tenth of pandas' time, which was a
    fifth of a 1,000-trace report's writing (issue 35). With ``blank_missing``, a missing value
    is an empty cell (as ``frame.where(frame.notna(), "")`` would give, without building it)."""
    return _html(frame.columns, frame.itertuples(index=False, name=None), classes,
                 blank_missing)


def _html(columns: Iterable[Any], cells: Iterable[tuple[Any, ...]], classes: str,
          blank_missing: bool = False) -> str:
    head = "".join(f"      <th>{_cell(c)}</th>\n" for c in columns)

    def cell(v: Any) -> str:
        return "" if blank_missing and _missing(v) else _cell(v)

    rows = "".join(
        "    <tr>\n" + "".join(f"      <td>{cell(v)}</td>\n" for v in row) + "    </tr>\n"
        for row in cells)
    return (f'<table class="dataframe {classes}">\n  <thead>\n'
            f'    <tr style="text-align: right;">\n{head}    </tr>\n  </thead>\n'
            f"  <tbody>\n{rows}  </tbody>\n</table>")


def map_cells(frame: pd.DataFrame, fn: Callable[[Any], str]) -> pd.DataFrame:
    """``fn`` on every cell (DataFrame.map in pandas >= 2.1, applymap before)."""
    import pandas as pd

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
