"""A table's rows without pandas: the CSV, the records and the cells ``pd.DataFrame`` gives.

A report of demo-size traces spent 0.15 s of its 3.3 s importing pandas, only to build small
frames from lists of rows and write them out (issue 35). :class:`Rows` keeps the rows as they
were given and works out each column's values as ``pd.DataFrame(rows, columns)`` converts them:

* a row that is a mapping lacks a key: the value is NaN; the columns are the keys in the order
  they first appear, unless ``columns`` names them;
* a column of ints is int64; of ints with a missing value, or ints and floats, float64 (3 is
  written ``3.0``); of bools, bool; with anything else (text, a tuple, a bool beside a missing
  value), object, which keeps each value as it is; a column of None only stays object.

A column that holds anything else numpy would store in its own way (float32, a date, an int
beyond int64) is not guessed at: :attr:`Rows.plain` is False and the table asks pandas, as
before. ``tests/studies/test_rows.py`` compares the three outputs with pandas' on generated
columns and on every table of a demo analysis.
"""

from __future__ import annotations

import csv
import functools
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_INT64 = (-(2**63), 2**63 - 1)
_MISSING_KEY = math.nan


_KINDS = {"builtins.bool": "bool", "numpy.bool_": "bool", "builtins.int": "int",
          "numpy.int64": "int", "builtins.float": "float", "numpy.float64": "float"}


def _kind(v: Any) -> str:
    """'bool', 'int' or 'float' for a value pandas converts without guessing; 'other' for
    one it stores in a way of its own (another numpy type, an int beyond int64, a subclass of
    a number); 'object' for the rest (text, tuples), which pandas keeps as they are."""
    kind = _KINDS.get(f"{type(v).__module__}.{type(v).__qualname__}")
    if kind == "int" and not _INT64[0] <= v <= _INT64[1]:
        return "other"
    if kind is not None:
        return kind
    if type(v).__module__ == "numpy" or isinstance(v, int | float | complex):
        return "other"
    return "object"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _column(values: list[Any]) -> list[Any] | None:
    """The column's values as pandas holds them, or None when pandas must decide."""
    kinds = {_kind(v) for v in values if not _missing(v)}
    if "other" in kinds:
        return None
    gaps = any(_missing(v) for v in values)
    if not kinds:  # nothing but None and NaN: object if all None, else float64
        return values if all(v is None for v in values) else [math.nan] * len(values)
    if kinds == {"bool"} and not gaps:
        return [bool(v) for v in values]
    if kinds == {"int"} and not gaps:
        return [int(v) for v in values]
    if kinds <= {"int", "float"}:  # float64, a gap as NaN
        return [math.nan if _missing(v) else float(v) for v in values]
    return values  # object: each value as it is


@dataclass(frozen=True, eq=False)
class Rows:
    """Rows as given to ``pd.DataFrame(rows, columns=columns)``, and their columns."""

    rows: tuple[Any, ...]
    columns_given: tuple[str, ...] | None = None

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any] | Sequence[Any]],
           columns: Sequence[str] | None = None) -> Rows:
        return cls(tuple(rows), None if columns is None else tuple(columns))

    @property
    def columns(self) -> tuple[str, ...]:
        if self.columns_given is not None:
            return self.columns_given
        seen: dict[str, None] = {}
        for row in self.rows:
            if isinstance(row, Mapping):
                seen.update(dict.fromkeys(row))
            else:
                return tuple(str(i) for i in range(len(row)))  # pandas' 0, 1, ...: not used
        return tuple(seen)

    def _raw(self, j: int, name: str) -> list[Any]:
        return [row.get(name, _MISSING_KEY) if isinstance(row, Mapping) else row[j]
                for row in self.rows]

    @functools.cached_property
    def converted(self) -> list[list[Any]] | None:
        """Each column's values as pandas holds them (column-major), or None if pandas must
        decide (see the module's docstring). Worked out once: a table asks for it for its
        CSV, its records and its HTML (four times a table in a report); read-only."""
        out = []
        for j, name in enumerate(self.columns):
            column = _column(self._raw(j, name))
            if column is None:
                return None
            out.append(column)
        return out

    @property
    def plain(self) -> bool:
        """Whether :meth:`to_csv`, :meth:`records` and :meth:`cells` can answer alone."""
        if self.columns_given is None and any(not isinstance(r, Mapping) for r in self.rows):
            return False
        return self.converted is not None

    @property
    def empty(self) -> bool:
        return not self.rows or not self.columns

    def cells(self) -> list[tuple[Any, ...]]:
        """The rows' values after conversion (``DataFrame.itertuples(index=False)``)."""
        columns = self.converted
        assert columns is not None, "ask pandas for a table that is not plain"
        return list(zip(*columns, strict=True))  # no columns: no cells (pandas' zip too)

    def to_csv(self) -> str:
        """``DataFrame.to_csv(index=False, lineterminator="\\n")``."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        if not self.columns:  # pandas writes an empty line per row
            return out.getvalue() + "\n" * len(self.rows)
        for row in self.cells():
            writer.writerow(["" if _missing(v) else str(v) for v in row])
        return out.getvalue()

    def records(self) -> list[dict[str, Any]]:
        """Rows as dicts, a missing or non-finite number as None (``Table.records``)."""
        names = self.columns
        return [{k: _plain(v) for k, v in zip(names, row, strict=True)} for row in self.cells()]


def _plain(v: Any) -> Any:
    if _missing(v):
        return None
    item = getattr(v, "item", None)
    if item is not None and type(v).__module__ == "numpy":
        v = item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
