"""Tables given as rows write what pandas wrote from the same rows: the CSV, the records of
summary.json and the HTML cells, to the byte (issue 35: the report no longer imports pandas)."""

from __future__ import annotations

import dataclasses
import enum
import itertools
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ksptrace.studies.rows import Rows
from ksptrace.studies.table import Table, _plain, html_table
from ksptrace.studies.variability.pages import tables
from ksptrace.studies.variability.pages.apriori import apriori_table
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.studies.variability.run.pipeline import analyze_trace
from ksptrace.trace.synthetic import synthetic_trace

VALUES: list[Any] = [
    0, 1, -7, 2**62, np.int64(5), 0.1 + 0.2, 1e16, 1e-5, -0.0, 3.0, 1e22, 5e-324, math.inf,
    -math.inf, math.nan, np.float64(2.5), np.float64(math.nan), True, False, np.bool_(True),
    None, "", "x", "a,b", 'q"r', "two\nlines", "<b>&", (1.0, np.float64(2.5)), "é",
]
"""Values of every kind a table holds (and a few it does not)."""


def _pandas_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """What Table.records gave before rows: pandas' conversion, then _plain."""
    clean = frame.astype(object).where(frame.notna(), None)
    return [{k: _plain(v) for k, v in row.items()} for row in clean.to_dict("records")]


def _same_as_pandas(t: Table) -> None:
    """Every output of ``t`` equals the one its pandas frames give."""
    frame = t.frame
    assert t.to_csv() == frame.to_csv(index=False, lineterminator="\n")
    assert t.records() == _pandas_records(frame)
    assert t.empty == frame.empty
    display = t.display
    if display is not None:
        assert t.to_html() == html_table(display, f"data t-{t.name}")
        assert t.shows_nothing == (frame.empty or display.empty)
    else:
        assert t.to_html() == html_table(frame, f"data t-{t.name}", blank_missing=True)


def _columns(seed: int, count: int) -> list[list[Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        size = int(rng.integers(1, 5))
        pool = [VALUES[int(i)] for i in rng.integers(0, len(VALUES), size=3)]
        out.append([pool[int(i)] for i in rng.integers(0, len(pool), size=size)])
    return out


@pytest.mark.parametrize("seed", range(40))
def test_generated_columns_give_what_pandas_gives(seed: int) -> None:
    """Columns of one to three kinds of value, as dicts (some keys missing), as dicts with the
    columns named, and as lists with the columns named."""
    columns = _columns(seed, 12)
    for column in columns:
        n = len(column)
        dicts = [{"v": v, "k": i} if (i + seed) % 3 else {"k": i} for i, v in enumerate(column)]
        for t in (Table("d", "D", Rows.of(dicts)),
                  Table("c", "C", Rows.of(dicts, ["v", "k", "absent"])),
                  Table("l", "L", Rows.of([[v, i] for i, v in enumerate(column)], ["v", "i"]),
                        display=Rows.of([[str(v)] for v in column], ["v"])),
                  Table("s", "S", Rows.of(dicts), display=Rows.of(dicts))):  # cells as given
            _same_as_pandas(t)
        assert n >= 1


def test_every_pair_of_values_in_a_column() -> None:
    for a, b in itertools.product(VALUES, repeat=2):
        _same_as_pandas(Table("p", "P", Rows.of([{"x": a}, {"x": b}])))
        _same_as_pandas(Table("q", "Q", Rows.of([[a], [b]], ["x"])))


@pytest.mark.parametrize(("rows", "columns"), [
    ([], None), ([], ["a", "b"]), ([{}], None), ([{"a": 1}, {"b": 2}], None),
    ([{"b": 1, "a": 2}, {"c": 3}], None), ([{"a": 1, "c": 3}], ["a"]), ([{"a": None}] * 3, None),
])
def test_edge_shapes(rows: list[Any], columns: list[str] | None) -> None:
    _same_as_pandas(Table("e", "E", Rows.of(rows, columns)))


def test_what_pandas_must_decide_is_left_to_pandas() -> None:
    """float32, a numpy int of another width, an int beyond int64, an int enum, a complex,
    rows that are lists with no column names: not plain, and still pandas' own output."""
    class Level(enum.IntEnum):
        HIGH = 3

    for rows, columns in (([{"a": np.float32(0.1)}], None), ([{"a": np.int32(3)}], None),
                          ([{"a": 2**70}], None), ([[1, 2]], None), ([{"a": Level.HIGH}], None),
                          ([{"a": 1j}], None)):
        data = Rows.of(rows, columns)
        assert not data.plain
        _same_as_pandas(Table("o", "O", data))


def test_a_table_of_rows_is_a_table() -> None:
    t = Table("r", "R", Rows.of([{"a": 1.5}]), notes=("n",))
    again = dataclasses.replace(t, notes=("m",))
    assert (again.name, again.notes, again.to_csv()) == ("r", ("m",), "a\n1.5\n")
    assert pickle.loads(pickle.dumps(t)).to_csv() == t.to_csv()
    assert t.frame is t.frame  # made once
    with pytest.raises(TypeError, match="needs a frame or rows"):
        Table("x", "X")


@pytest.fixture(scope="module")
def analyses() -> list[Any]:
    opt = AnalysisOptions(candidates=("johnsonsu", "norm", "gamma"), mc_runs=2)
    made = [synthetic_trace(p, 60, 2, ksp, seed=i, n=n) for i, (p, ksp, n) in enumerate(
        [(2, "gmres", 10_000), (4, "gmres", 10_000), (2, "gmres", 20_000), (1, "bcgs", 10_000),
         (2, "pgmres", 10_000)])]
    return [analyze_trace(t, opt) for t in made]


def test_every_variability_table_gives_what_pandas_gave(analyses: list[Any],
                                                        tmp_path: Path) -> None:
    made = [tables.model_table(analyses), tables.prediction_table(analyses),
            apriori_table(analyses, runs=2), tables.scaling_table(analyses, "P"),
            tables.scaling_table(analyses, "n"), tables.variability_table(analyses)]
    for a in analyses:
        made += [tables.ks_table(a), tables.node_table(a), tables.fit_table(a),
                 tables.models_table(a), tables.jsu_table(a)]
    for t in made:
        assert isinstance(t.data, Rows)
        assert t.data.plain, t.name
        _same_as_pandas(t)
    scaling = [t for t in made if t.name.startswith("scaling_")]
    assert all(not t.empty for t in scaling)


def test_columns_are_converted_once_per_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report asks each table for its CSV, records and HTML: the conversion runs once (it
    was 242 conversions for 113 tables in a 20-trace report), and every output is as before."""
    import ksptrace.studies.rows as rows_module

    calls = []
    column = rows_module._column
    monkeypatch.setattr(rows_module, "_column", lambda values: calls.append(1) or column(values))
    rows = Rows.of([{"a": 1, "b": 2.5}, {"a": 2, "b": None}])
    assert rows.plain
    assert rows.to_csv() == "a,b\n1,2.5\n2,\n"
    assert rows.records() == [{"a": 1, "b": 2.5}, {"a": 2, "b": None}]
    assert rows.cells()[1][0] == 2
    assert len(calls) == 2  # one per column, once
