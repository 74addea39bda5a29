"""``ksptrace segment`` on synthetic traces, ``segment-eval`` on a small count, Extra-P export."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.errors import AnalysisError
from ksptrace.studies.segmentation.extrap_export import (
    ExtrapSeries,
    group_repetitions,
    to_extrap_text,
)
from ksptrace.studies.segmentation.series import METRICS
from ksptrace.trace.model import Trace
from ksptrace.trace.write import write_trace
from tests.trace.test_crafted import crafted

CORES = 2


def oversubscribed_trace(nprocs: int, seed: int, ksp: str = "cg", iterations: int = 60) -> Trace:
    """Strong scaling up to the core count, then time slicing: busy-polling ranks that share a
    core wait for each other's time slices, so the time jumps and then grows with P."""
    rng = np.random.default_rng(seed)
    base = 2e-3 / min(nprocs, CORES)
    if nprocs > CORES:
        base *= 3 * nprocs / CORES
    times = base * (1 + rng.uniform(0, 0.05, (nprocs, iterations)))
    stamps = np.concatenate([np.zeros((nprocs, 1)), np.cumsum(times, axis=1)], axis=1)
    return Trace(
        stamps=stamps,
        residual_norms=np.geomspace(1, 1e-6, iterations + 1),
        node_ids=np.zeros(nprocs, dtype=np.int64),
        hostnames=("localhost",) * nprocs,
        solve_seconds=stamps[:, -1] * 1.01,
        attrs={"problem": "laplace1d", "ksp": ksp, "pc": "none", "n": 10_000,
               "iterations": iterations, "nprocs": nprocs},
    )  # fmt: skip


def write_campaign(folder: Path, procs: range, reps: int = 2, ksp: str = "cg") -> list[str]:
    folder.mkdir(exist_ok=True)
    paths = []
    for p in procs:
        for r in range(reps):
            path = folder / f"{ksp}_p{p}_r{r}.h5"
            seed = 100 * p + r + (7 if folder.name == "again" else 0)
            write_trace(oversubscribed_trace(p, seed=seed, ksp=ksp), path)
            paths.append(str(path))
    return paths


def test_oversubscription_change_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path, range(1, 9), reps=1)
    paths += write_campaign(tmp_path / "again", range(1, 9), reps=1)
    out = tmp_path / "report"
    assert main(["segment", *paths, "--out", str(out)]) == 0  # all three metrics
    report = json.loads((out / "segment.json").read_text())
    by_metric = {s["metric"]: s for s in report["series"]}
    assert set(by_metric) == {"undisturbed_time", "solve_time", "mean_iteration_time",
                              "johnsonsu_loc_ak"}
    solve = by_metric["solve_time"]
    assert solve["segmented"]
    (cp,) = solve["change_points"]
    assert cp["p_lo"] == 2
    assert cp["p_hi"] == 3
    assert solve["p_distinct"] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert len(solve["p"]) == 16  # repetitions kept in the record
    assert solve["segments"][0]["model"] is None
    assert "no other integer p" in solve["segments"][0]["advice"]  # p = 1, 2 only
    assert solve["segments"][1]["model"] is not None
    assert by_metric["mean_iteration_time"]["segmented"]
    for name in ("segment.md", "segment.html", solve["plot"], solve["extrap_text"]):
        assert (out / name).is_file()
    assert "between p = 2 and p = 3" in (out / "segment.md").read_text()
    assert "window pattern" in capsys.readouterr().out


def test_no_change_without_oversubscription(tmp_path: Path) -> None:
    # as if every rank had its own core: strong scaling 1/p all the way
    global CORES
    paths = []
    try:
        CORES = 64
        paths = write_campaign(tmp_path, range(1, 9), reps=1)
    finally:
        CORES = 2
    out = tmp_path / "r"
    args = ["segment", *paths, "--out", str(out), "--no-plots", "--metrics", "solve_time"]
    assert main(args) == 0
    solve = json.loads((out / "segment.json").read_text())["series"][0]
    assert solve["metric"] == "solve_time"
    assert not solve["segmented"]
    assert "p^(" in solve["single_model"] or "log2" in solve["single_model"]


def test_too_few_process_counts_is_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path, range(1, 6), reps=1, ksp="gmres")
    out = tmp_path / "r"
    assert main(["segment", *paths, "--out", str(out), "--no-plots"]) == 0
    text = capsys.readouterr().out
    assert text.count("need at least 6 distinct p") == len(METRICS)  # one per series
    assert "Traceback" not in text
    record = json.loads((out / "segment.json").read_text())["series"][0]
    assert not record["detection_ran"]


def test_groups_by_problem_and_solver(tmp_path: Path) -> None:
    paths = write_campaign(tmp_path, range(1, 9), reps=1, ksp="cg")
    paths += write_campaign(tmp_path, range(1, 9), reps=1, ksp="gmres")
    out = tmp_path / "r"
    metrics = "solve_time,mean_iteration_time"
    assert main(["segment", *paths, "--out", str(out), "--no-plots", "--metrics", metrics]) == 0
    series = json.loads((out / "segment.json").read_text())["series"]
    assert sorted({s["ksp"] for s in series}) == ["cg", "gmres"]
    assert len(series) == 4
    assert all(s["segmented"] for s in series)


def test_unknown_metric_is_a_usage_error(tmp_path: Path) -> None:
    paths = write_campaign(tmp_path, range(1, 3), reps=1)
    assert main(["segment", *paths, "--out", str(tmp_path / "r"), "--metrics", "bogus"]) == 2


def test_segment_eval_small(tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    args = ["segment-eval", "--series", "40", "--split-series", "10", "--json", str(out)]
    assert main(args) == 0
    data = json.loads(out.read_text())
    assert len(data["noise_table"]) == 24
    assert len(data["split_table"]) == 2 * 2 * (5 + 6 + 7 + 8 + 9)
    lin = data["summary"]["linear"]
    # with 40 series per cell the figures are rough, but a broken detector fails these
    assert lin["overall_correct_pct"] > 75
    assert lin["located_in_pct"] > 70
    assert data["summary"]["geometric"]["fp_max_pct_noise_le_5"] <= 10


# ---------------------------------------------------------------------- Extra-P text format


def parse_extrap_text(text: str) -> dict[tuple[str, str], list[list[float]]]:
    """A minimal reader that follows Extra-P's text format rules."""
    points: list[float] = []
    region = metric = ""
    data: dict[tuple[str, str], list[list[float]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        field, _, value = line.partition(" ")
        if field == "PARAMETER":
            assert value.split() == ["p"]
        elif field == "POINTS":
            points = [float(v) for v in value.split()]
        elif field == "REGION":
            region = value
        elif field == "METRIC":
            metric = value
            data[(region, metric)] = []
        elif field == "DATA":
            data[(region, metric)].append([float(v) for v in value.split()])
        else:
            raise AssertionError(f"unknown field {field}")
    for rows in data.values():
        assert len(rows) == len(points)
    return data


def test_extrap_export_round_trip() -> None:
    pts, reps = group_repetitions([1, 2, 2, 4, 8], [1.5, 2.0, 2.25, 3.0, np.nan])
    assert pts.tolist() == [1, 2, 4]
    text = to_extrap_text(
        "p",
        pts,
        [
            ExtrapSeries("KSP Solve", "time", reps),
            ExtrapSeries("KSP Solve", "iter", [[1], [2], [3]]),
        ],
        {"problem": "laplace1d"},
    )
    lines = text.splitlines()
    assert lines[0] == "# problem: laplace1d"
    assert lines[1:3] == ["PARAMETER p", "POINTS 1.0 2.0 4.0"]
    assert lines.count("REGION KSP_Solve") == 1
    data = parse_extrap_text(text)
    assert data[("KSP_Solve", "time")] == [[1.5], [2.0, 2.25], [3.0]]
    assert data[("KSP_Solve", "iter")] == [[1.0], [2.0], [3.0]]


def test_extrap_export_refuses_mismatched_points() -> None:
    with pytest.raises(AnalysisError, match="separate files"):
        to_extrap_text("p", [1, 2, 3], [ExtrapSeries("r", "m", [[1.0], [2.0]])])
    with pytest.raises(AnalysisError, match="distinct"):
        to_extrap_text("p", [1, 1, 3], [ExtrapSeries("r", "m", [[1.0], [2.0], [3.0]])])


def test_different_sizes_at_one_p_are_separate_series() -> None:
    from ksptrace.studies.segmentation.series import collect
    from tests.trace.test_io import make_trace

    def with_attrs(nprocs: int, n: int) -> Trace:
        base = make_trace(nprocs=nprocs, k=4)
        attrs = {**base.attrs, "ksp": "gmres", "n": n, "pc": "jacobi", "iterations": 4}
        return Trace(base.stamps, base.residual_norms, base.node_ids, base.hostnames,
                     base.solve_seconds, attrs)

    weak = collect([with_attrs(p, 1000 * p) for p in (1, 2, 3)])
    assert list(weak) == [("laplace1d", "gmres")]  # one n per P: a weak-scaling series
    mixed = collect([with_attrs(p, n) for p in (1, 2, 3) for n in (1000, 2000)])
    assert sorted(mixed) == [("laplace1d", "gmres n=1000"), ("laplace1d", "gmres n=2000")]
    assert all(len(v) == 3 for v in mixed.values())


# ------------------------------------------------------------ bad traces and write failures


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("ksptrace: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []




FAST_SEGMENT = ["--metrics", "solve_time"]


def test_bad_traces_are_named_once_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "good", range(1, 8), reps=1)
    bad = [crafted(tmp_path, name) for name in ("backwards", "stamps-group", "tiny-durations")]
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes(b"junk" * 100)
    bad.append(corrupt)
    out = tmp_path / "r"
    capsys.readouterr()
    args = ["segment", *paths[:3], *map(str, bad), *paths[3:], "--out", str(out), "--no-plots"]
    assert main([*args, *FAST_SEGMENT]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == len(bad), err
    for path, line in zip(bad, lines, strict=True):
        assert line.startswith(f"ksptrace: skipped {path}: ")
    assert "not increasing" in lines[0]
    assert "group" in lines[1]
    assert "below 1 ns" in lines[2]
    (series,) = json.loads((out / "segment.json").read_text())["series"]
    assert series["p"] == [1, 2, 3, 4, 5, 6, 7]


def test_nothing_left_fails_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = crafted(tmp_path, "backwards")
    out = tmp_path / "r"
    assert main(["segment", str(bad), "--out", str(out), *FAST_SEGMENT]) == 4
    assert "no trace could be read" in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_a_full_disk_gives_one_error_line_and_no_partial_output(
    tmp_path: Path, mount_tmpfs: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "t", range(1, 8), reps=1)
    full = mount_tmpfs("full", "size=24k")
    out = full / "seg"
    assert main(["segment", *paths, "--out", str(out), *FAST_SEGMENT]) == 8
    line = _one_error_line(capsys.readouterr().err)
    assert "no space left" in line
    assert str(out) in line
    assert _leftovers(full) == []


def test_a_read_only_out_gives_one_error_line(
    tmp_path: Path, mount_tmpfs: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "t", range(1, 8), reps=1)
    disk = mount_tmpfs("ro", "size=1m")
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    rc = main(["segment", *paths, "--out", str(disk / "seg"), "--no-plots", *FAST_SEGMENT])
    assert rc == 8
    assert "read-only file system" in _one_error_line(capsys.readouterr().err)
    assert _leftovers(disk) == []


def test_an_out_under_a_file_fails_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "t", range(1, 8), reps=1)
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    rc = main(["segment", *paths, "--out", str(blocker / "seg"), *FAST_SEGMENT])
    assert rc == 8
    assert "is a file, not a folder" in _one_error_line(capsys.readouterr().err)
    assert blocker.read_text() == "not a folder"


def test_an_earlier_report_survives_a_failed_rewrite(
    tmp_path: Path, mount_tmpfs: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "t", range(1, 8), reps=1)
    disk = mount_tmpfs("disk", "size=256k")
    out = disk / "seg"
    assert main(["segment", *paths, "--out", str(out), "--no-plots", *FAST_SEGMENT]) == 0
    before = (out / "segment.json").read_text()
    with (disk / "filler").open("wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * (1 << 20))
    assert main(["segment", *paths, "--out", str(out), *FAST_SEGMENT]) == 8
    assert "no space left" in _one_error_line(capsys.readouterr().err)
    assert (out / "segment.json").read_text() == before
    assert _leftovers(disk) == ["filler", "seg"]


def test_a_folder_of_other_files_is_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "t", range(1, 8), reps=1)
    rc = main(["segment", *paths, "--out", str(tmp_path / "t"), *FAST_SEGMENT])
    assert rc == 2
    assert "holding other files" in _one_error_line(capsys.readouterr().err)
    assert len(list((tmp_path / "t").iterdir())) == len(paths)
