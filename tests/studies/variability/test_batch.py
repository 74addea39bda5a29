"""Many traces: the same report from N processes, from the per-trace cache, and cold."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from ksptrace.report.compose import write_report_files
from ksptrace.studies.variability.run import batch
from ksptrace.studies.variability.run.options import AnalysisOptions
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace

FAST = AnalysisOptions(candidates=("johnsonsu", "norm", "gamma"), fit_size=2000, mc_runs=2)


class Recorder:
    def __init__(self) -> None:
        self.verdicts: dict[str, str] = {}

    def step(self, text: str) -> None:
        pass

    def advance(self, item: str, verdict: str = "ok") -> None:
        self.verdicts[Path(item).name] = verdict

    def note(self, text: str) -> None:
        pass


def traces(folder: Path, count: int = 4, start: int = 0) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(start, start + count):
        p = folder / f"t{k}.h5"
        write_trace(synthetic_trace(4 + 2 * (k % 2), 60, 2, ("gmres", "pgmres", "bcgs")[k % 3],
                                    seed=k, n=1000 * (1 + k)), p)
        out.append(p)
    return out


def digest(folder: Path) -> dict[str, str]:
    """Every output file but the creation time, for comparing two reports."""
    out = {}
    for p in sorted(folder.iterdir()):
        if p.suffix == ".csv":
            out[p.name] = p.read_text()
    summary = json.loads((folder / "summary.json").read_text())
    summary["metadata"].pop("created")
    out["summary.json"] = json.dumps(summary, sort_keys=True)
    return out


def test_two_processes_give_the_numbers_of_one(tmp_path: Path) -> None:
    paths = traces(tmp_path / "t", 5)
    one = write_report_files(tmp_path / "one", paths, FAST, with_figures=False, jobs=1)
    two = write_report_files(tmp_path / "two", paths, FAST, with_figures=False, jobs=2)
    assert one.analysed == two.analysed == 5
    assert digest(tmp_path / "one") == digest(tmp_path / "two")


def test_a_rerun_analyses_only_new_traces_and_merges_to_the_cold_report(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    paths = traces(tmp_path / "t", 3)
    first = Recorder()
    write_report_files(tmp_path / "r", paths, FAST, first, with_figures=False, cache=cache)
    assert set(first.verdicts.values()) == {"ok"}
    assert len(list(cache.glob("*.pkl"))) == 3
    paths += traces(tmp_path / "t", 1, start=3)
    second = Recorder()
    write_report_files(tmp_path / "r", paths, FAST, second, with_figures=False, cache=cache)
    assert second.verdicts == {"t0.h5": "cached", "t1.h5": "cached", "t2.h5": "cached",
                               "t3.h5": "ok"}
    write_report_files(tmp_path / "cold", paths, FAST, with_figures=False)
    assert digest(tmp_path / "r") == digest(tmp_path / "cold")


def test_other_options_or_figures_are_other_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    paths = traces(tmp_path / "t", 1)
    write_report_files(tmp_path / "a", paths, FAST, with_figures=False, cache=cache)
    rec = Recorder()
    other = AnalysisOptions(candidates=("norm",), fit_size=2000, mc_runs=2)
    write_report_files(tmp_path / "b", paths, other, rec, with_figures=False, cache=cache)
    assert rec.verdicts == {"t0.h5": "ok"}
    assert batch.options_key(FAST, False) != batch.options_key(other, False)
    assert batch.options_key(FAST, False) != batch.options_key(FAST, True)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong-object"])
def test_a_damaged_entry_is_analysed_again(tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    paths = traces(tmp_path / "t", 1)
    write_report_files(tmp_path / "a", paths, FAST, with_figures=False, cache=cache)
    [entry] = cache.glob("*.pkl")
    if damage == "truncate":
        entry.write_bytes(entry.read_bytes()[:100])
    elif damage == "garbage":
        entry.write_bytes(b"not a pickle")
    else:
        entry.write_bytes(pickle.dumps({"a": 1}))
    rec = Recorder()
    report = write_report_files(tmp_path / "b", paths, FAST, rec, with_figures=False, cache=cache)
    assert rec.verdicts == {"t0.h5": "ok"}
    assert report.analysed == 1
    assert digest(tmp_path / "a") == digest(tmp_path / "b")


def test_entries_of_traces_no_longer_given_are_pruned(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    paths = traces(tmp_path / "t", 3)
    write_report_files(tmp_path / "a", paths, FAST, with_figures=False, cache=cache)
    write_report_files(tmp_path / "a", paths[:1], FAST, with_figures=False, cache=cache)
    assert [p.name for p in cache.glob("*.pkl")] == [
        batch.entry_name(paths[0], FAST, False)]


def test_a_renamed_copy_is_reported_under_its_new_name(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    [p] = traces(tmp_path / "t", 1)
    write_report_files(tmp_path / "a", [p], FAST, with_figures=False, cache=cache)
    copy = tmp_path / "elsewhere.h5"
    copy.write_bytes(p.read_bytes())
    rec = Recorder()
    write_report_files(tmp_path / "b", [copy], FAST, rec, with_figures=False, cache=cache)
    assert rec.verdicts == {"elsewhere.h5": "cached"}
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["traces"][0]["trace"] == str(copy)


def test_bad_traces_are_skipped_and_not_cached(tmp_path: Path) -> None:
    from tests.trace.test_crafted import crafted

    cache = tmp_path / "cache"
    paths = traces(tmp_path / "t", 2)
    bad = crafted(tmp_path / "t", "stamps-1d")
    rec = Recorder()
    report = write_report_files(tmp_path / "a", [*paths, bad], FAST, rec, with_figures=False,
                                cache=cache, jobs=2)
    assert report.analysed == 2
    assert rec.verdicts[bad.name].startswith("skipped: ")
    assert len(list(cache.glob("*.pkl"))) == 2


def test_one_process_reads_each_trace_while_the_one_before_is_analysed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader child is told which files come, in order (cached ones are not read)."""
    from ksptrace.trace import reader_child
    from ksptrace.trace.read import read_trace

    paths = [str(p) for p in traces(tmp_path / "in", count=3)]
    cache = tmp_path / "cache"
    list(batch.run(paths[:1], lambda p, o, f: batch.FromFile(p, read_trace(p).source), FAST,
                   False, cache=cache))
    plans: list[list[str]] = []
    asked: list[object] = []
    real = reader_child._Reader._ask_next

    def watch(self: reader_child._Reader, p: Path) -> None:
        plans.append(list(self.plan))
        real(self, p)
        asked.append(self.asked)

    monkeypatch.setattr(reader_child._Reader, "_ask_next", watch)

    def worker(path: str, options: AnalysisOptions, figures: bool) -> object:
        return read_trace(path).nprocs

    done = list(batch.run(paths, worker, FAST, False, cache=cache))
    assert [d.cached for d in done] == [True, False, False]
    assert plans[0] == paths[1:]  # the cached first trace is not in the plan
    assert [getattr(a, "key", (None,))[0] for a in asked] == [paths[2], None]
