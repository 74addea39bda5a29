"""``ksptrace analyze`` on collectives traces: its own section, alone or beside solver traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksptrace.cli.main import main
from ksptrace.studies.collectives.synthetic import allreduce_traces
from ksptrace.trace import collectives as ctrace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace


def _write(folder: Path) -> list[str]:
    folder.mkdir()
    traces = allreduce_traces(nprocs=(2, 4), sizes=(8, 64, 512, 4096), repetitions=3, cores=2)
    return [str(ctrace.write(t, folder / f"c{i}.h5")) for i, t in enumerate(traces)]


def test_collectives_only(tmp_path: Path) -> None:
    paths = _write(tmp_path / "t")
    out = tmp_path / "rep"
    assert main(["analyze", *paths, "--out", str(out), "--no-figures", "--quiet"]) == 0
    assert (out / "collectives.html").read_text().count("<h2>") == 6
    md = (out / "collectives.md").read_text()
    assert "| 4096 |" in md
    assert "P = 4 ran more ranks than cores" in md
    assert (out / "collectives_best.csv").read_text().count("\n") == 1 + 2 * 4


def test_beside_solver_traces(tmp_path: Path) -> None:
    paths = _write(tmp_path / "t")
    solver = tmp_path / "t" / "s.h5"
    write_trace(synthetic_trace(nprocs=2, iterations=50, seed=1), solver)
    out = tmp_path / "rep"
    assert main(["analyze", str(solver), *paths, "--out", str(out), "--no-figures",
                 "--quiet", "--no-cache"]) == 0
    assert (out / "report.html").is_file()
    assert (out / "collectives" / "collectives.html").is_file()
    # the report's contents lead to the collectives page, and its summary names it
    html = (out / "report.html").read_text()
    assert (f'<a href="collectives/collectives.html">Collective operations: {len(paths)} traces'
            '</a>') in html
    pages = json.loads((out / "summary.json").read_text())["pages"]
    assert pages == [{"href": "collectives/collectives.html",
                      "title": f"Collective operations: {len(paths)} traces"}]


def test_a_report_without_collectives_links_no_page(tmp_path: Path) -> None:
    solver = write_trace(synthetic_trace(nprocs=2, iterations=50, seed=1), tmp_path / "s.h5")
    out = tmp_path / "rep"
    assert main(["analyze", str(solver), "--out", str(out), "--no-figures", "--quiet",
                 "--no-cache"]) == 0
    assert "collectives.html" not in (out / "report.html").read_text()
    assert json.loads((out / "summary.json").read_text())["pages"] == []


def test_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _write(tmp_path / "t")
    solver = write_trace(synthetic_trace(nprocs=2, iterations=5, seed=1), tmp_path / "s.h5")
    assert main(["show", paths[0], str(solver)]) == 0
    out = capsys.readouterr().out
    assert "(collectives, schema 2)" in out
    assert "algorithm_name  ring" in out
    assert "      4096" in out  # one row per message size
    assert "ksp" in out  # the solver trace after it


def test_decide_on_collectives_traces(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    traces = allreduce_traces(nprocs=(2, 4), sizes=(8, 64, 512, 4096), repetitions=3)
    for i, (t, number) in enumerate(zip(traces, [4, 3, 6] * 2, strict=True)):
        object.__setattr__(t, "attrs", {**t.attrs, "algorithm": number})
        ctrace.write(t, folder / f"c{i}.h5")
    out = tmp_path / "dec"
    assert main(["decide", str(folder), "--axes", "nprocs,bytes", "--method", "algorithm",
                 "--ompi-rules", "allreduce", "--out", str(out), "--quiet"]) == 0
    (rules,) = out.rglob("*allreduce*")
    assert "# collective: allreduce" in rules.read_text()


def test_decide_labels_each_size_by_the_algorithm_that_ran(tmp_path: Path) -> None:
    """A forced ring that ran recursive doubling below P elements is recursive doubling (3) in
    the decision map, not ring (4): the map never compares identical code under two names."""
    from ksptrace.studies.collectives.report import decision_runs

    (ring,) = allreduce_traces(nprocs=(4,), algorithms=("ring",), sizes=(16, 4096),
                               repetitions=3)
    attrs = {**ring.attrs, "algorithm": 4, "mpi_flavor": "openmpi",
             "algorithm_ran": '{"16": "recursive_doubling", "4096": "ring"}'}
    object.__setattr__(ring, "attrs", attrs)
    small, large = decision_runs(ring)
    assert (small.attrs["algorithm"], small.attrs["algorithm_name"]) == (3, "recursive_doubling")
    assert (large.attrs["algorithm"], large.attrs["algorithm_name"]) == (4, "ring")


def test_inputs_left_out_are_named_grouped(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 50: analyze counted what it left out and named none of its collectives inputs:
    the cache (and the jobs' array) hold solver analyses only, so the collectives traces are
    named there as left out, and the merge job reads them; the closing line groups the skipped
    traces by cause."""
    paths = _write(tmp_path / "t")
    solver = tmp_path / "t" / "s.h5"
    write_trace(synthetic_trace(nprocs=2, iterations=50, seed=1), solver)
    bad = [tmp_path / "t" / f"bad{i}.h5" for i in range(2)]
    for b in bad:
        b.write_bytes(b"not hdf5")
    given = [str(solver), *map(str, bad), *paths]
    assert main(["analyze", *given, "--cache-only", "--cache", str(tmp_path / "c"), "--quiet",
                 "--mc-runs", "2", "--no-figures"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == (f"cached 1 of 3 traces in {tmp_path / 'c'} (2 skipped: 2 not a "
                           "readable HDF5 file)")
    [left] = [ln for ln in err.splitlines() if "left out" in ln]
    assert left == (f"ksptrace: left out 6 collectives traces ({paths[0]}, {paths[1]}, "
                    f"{paths[2]} and 3 more): the cache holds solver analyses; their page is "
                    "made by ksptrace analyze TRACES --out DIR")
    report = tmp_path / "rep"
    assert main(["analyze", *given, "--out", str(report), "--backend", "slurm", "--dry-run",
                 "--mc-runs", "2"]) == 0
    assert "the merge also reads 6 collectives traces" in capsys.readouterr().out
    merge = Path(f"{report}.jobs", "merge.sbatch").read_text()
    assert all(str(Path(p).resolve()) in merge for p in paths)
    assert main(["analyze", *given, "--out", str(report), "--no-figures", "--quiet",
                 "--mc-runs", "2", "--cache", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "(1 traces analysed, 2 skipped: 2 not a readable HDF5 file; per-trace" in out
    assert "(6 collectives traces)" in out


def test_skipped_traces_are_grouped_by_cause() -> None:
    from ksptrace.cli import leftout

    skipped = [(f"d/a{i}.h5", f"d/a{i}.h5: not a readable HDF5 file (corrupt); rerun it")
               for i in range(10)]
    skipped += [("b.h5", "b.h5: incomplete trace, missing datasets stamps"),
                ("c.h5", "c.h5 has schema 9, newer than this ksptrace's 3; upgrade"),
                ("e.h5", "timings contain NaN or inf"), ("f.h5", "stamps not increasing")]
    assert leftout.reasons(skipped) == ("14 skipped: 10 not a readable HDF5 file; 1 incomplete "
                                        "trace; 1 has schema N; 2 other")
    assert leftout.names([f"x{i}.h5" for i in range(54)]) == "x0.h5, x1.h5, x2.h5 and 51 more"
    assert leftout.names(["x.h5"]) == "x.h5"
