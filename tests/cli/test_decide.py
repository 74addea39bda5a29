"""``ksptrace decide``: a campaign folder of traces in, decision maps and code out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ksptrace.cli.main import main
from ksptrace.trace.read import read_trace
from ksptrace.trace.synthetic import synthetic_trace
from ksptrace.trace.write import write_trace
from tests.trace.test_crafted import crafted

SPEED = {"gmres": 1.0, "cg": 1.3, "bcgs": 1.6}


def write_campaign(folder: Path) -> list[Path]:
    """Traces over P in {1, 2, 4} x n in {1e3, 1e4, 1e5} for three solvers whose times cross:
    gmres is cheapest at small n, bcgs at large n (base time per iteration scaled per method)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for p in (1, 2, 4):
        for n in (1000, 10_000, 100_000):
            for k, (ksp, factor) in enumerate(SPEED.items()):
                scale = factor if n < 50_000 else 2.0 / factor
                t = synthetic_trace(p, 30, p, ksp, n=n, seed=7 * p + k,
                                    base_seconds=1e-4 * scale * (n / 1000) ** 0.5)
                path = folder / "traces" / f"{ksp}-P{p}-n{n}.h5"
                path.parent.mkdir(exist_ok=True)
                write_trace(t, path)
                paths.append(path)
    return paths


def test_decide_writes_the_map_of_the_fastest_solver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_campaign(tmp_path / "camp")
    out = tmp_path / "decide"
    assert main(["decide", str(tmp_path / "camp"), "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "3 x 3 cells, 3 methods" in text
    index = json.loads((out / "decision.json").read_text())
    [m] = index["maps"]
    assert m["axes"] == ["nprocs", "n"]
    # the expected best per cell, from the traces' own KSPSolve times
    best: dict[tuple[int, int], tuple[float, str]] = {}
    for p in paths:
        t = read_trace(p)
        key = (t.nprocs, int(t.attrs["n"]))
        best[key] = min(best.get(key, (np.inf, "")), (t.solve_max, str(t.attrs["ksp"])))
    expected = [[best[(p, n)][1] for n in (1000, 10_000, 100_000)] for p in (1, 2, 4)]
    assert m["best"] == expected
    sub = out / m["folder"]
    opts = sorted((sub / "petsc-options").glob("*.opts"))
    assert opts
    assert all("-ksp_type " in o.read_text() for o in opts)
    assert (out / "decision.html").read_text().count("<img") == 3
    # the follow-up campaign: a point between the two sizes where the winner changes
    text = (sub / "next.toml").read_text()
    assert "n = [" in text
    assert "31623" in text  # sqrt(10^4 * 10^5), at every P where gmres gives way to bcgs
    assert 'problem = "synthetic"' in text


def test_decide_as_a_user_runs_it(tmp_path: Path) -> None:
    write_campaign(tmp_path / "camp")
    r = subprocess.run([sys.executable, "-m", "ksptrace", "decide", str(tmp_path / "camp"),
                        "--out", str(tmp_path / "o"), "--max-depth", "1", "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    index = json.loads((tmp_path / "o" / "decision.json").read_text())
    assert index["maps"][0]["chosen_tree"] == "depth ≤ 1"


@pytest.mark.parametrize(("args", "message"), [
    (["--axes", "nprocs"], "--axes takes two keys"),
    (["--axes", "nproc,n"], "did you mean nprocs"),
    (["--method", "solver"], "no run has the key 'solver'"),
    (["--threshold", "0"], "accuracy threshold is a share"),
])
def test_bad_requests_are_one_line(tmp_path: Path, args: list[str], message: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    write_campaign(tmp_path / "camp")
    code = main(["decide", str(tmp_path / "camp"), "--out", str(tmp_path / "o"), "--quiet",
                 *args])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err
    assert err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


def test_missing_or_empty_inputs_are_one_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["decide", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) != 0
    assert "holds no trace" in capsys.readouterr().err
    assert main(["decide", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) != 0
    assert "does not exist" in capsys.readouterr().err


def test_a_corrupt_trace_is_named_and_skipped(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    write_campaign(tmp_path / "camp")
    bad = crafted(tmp_path / "camp" / "traces", "stamps-1d")
    assert main(["decide", str(tmp_path / "camp"), "--out", str(tmp_path / "o"),
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert bad.name in captured.err
    assert "1 skipped" in captured.out


def test_an_open_mpi_rules_file_for_a_collectives_map(tmp_path: Path) -> None:
    import dataclasses

    from ksptrace.studies.decisions.rules import decide_with_rules

    camp = tmp_path / "coll"
    camp.mkdir()
    for p in (2, 4):
        for size in (64, 512, 4096, 32768):
            for alg in ("1", "4"):  # algorithm numbers: no ompi_info needed
                fast = (alg == "1") == (size < 1024)
                t = synthetic_trace(p, 20, p, "gmres", n=1000, seed=p + size,
                                    base_seconds=1e-5 * (1.0 if fast else 3.0))
                t = dataclasses.replace(t, attrs={**t.attrs, "bytes": size, "algorithm": alg})
                write_trace(t, camp / f"{alg}-{p}-{size}.h5")
    out = tmp_path / "o"
    assert main(["decide", str(camp), "--axes", "nprocs,bytes", "--method", "algorithm",
                 "--ompi-rules", "allreduce", "--out", str(out), "--quiet"]) == 0
    [rules] = out.glob("*/ompi-rules-allreduce.conf")
    text = rules.read_text()
    assert decide_with_rules(text, 4, 100) == 1
    assert decide_with_rules(text, 4, 100_000) == 4
    assert decide_with_rules(text, 3, 2048) == 1  # between 512 and 4096: the lower one
    assert decide_with_rules(text, 3, 5000) == 4


def test_rules_for_solver_names_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_campaign(tmp_path / "camp")
    code = main(["decide", str(tmp_path / "camp"), "--ompi-rules", "allreduce", "--out",
                 str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert code != 0
    assert "is not an Open MPI algorithm" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_runs_in_no_map_are_counted_as_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 50: decide left out 8 traces (a group with one method) and said "0 skipped"."""
    import dataclasses

    folder = tmp_path / "camp"
    folder.mkdir()
    for p in (1, 2):
        for n in (1000, 10_000):
            for k, ksp in enumerate(("gmres", "cg")):
                t = synthetic_trace(p, 20, p, ksp, n=n, seed=3 * p + k)
                write_trace(t, folder / f"{ksp}-P{p}-n{n}.h5")
            lone = synthetic_trace(p, 20, p, "gmres", n=n, seed=9)
            write_trace(dataclasses.replace(lone, attrs={**lone.attrs, "pc": "sor"}),
                        folder / f"sor-P{p}-n{n}.h5")
    assert main(["decide", str(folder), "--out", str(tmp_path / "d"), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].endswith(
        "(1 map(s) from 8 runs; 4 runs left out, 0 skipped (unreadable))")
    assert "pc=sor: no decision map (4 runs left out): a decision map needs at least 2 methods" \
        in err
