"""Decision maps of runs whose trace strings are hostile: what ``ksptrace decide`` writes must
compile (C99, trigraphs on, warnings as errors), import and parse, carry each label exactly, and
run none of it (issue 27: a trigraph in a trace's ``problem`` put a constructor into decide.c;
a ``ksp`` with a newline wrote ``-log_view :file`` into an options file)."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ksptrace.report.decisions import write_decision
from ksptrace.studies.decisions import synthetic as syn
from ksptrace.studies.decisions.grouping import Run

CONSTRUCTOR = '??/"};__attribute__((constructor)) static void x(void){fopen("/tmp/pwn","w");}//'
METHODS = ("gmres", "cg\n-log_view :/tmp/ksptrace-pwned", CONSTRUCTOR, 'b\\cg\r"""')
PROBLEM = 'lap??/\n"); import os; os.system("touch /tmp/pwn") #'


def hostile_runs() -> list[Run]:
    m = syn.measurements(np.random.default_rng(3), 5, 6)
    names = {f"m{i}": name for i, name in enumerate(METHODS)}
    return [Run({"nprocs": int(a), "n": int(b), "ksp": names[str(k)], "problem": PROBLEM,
                 "pc": "jacobi", "iterations": 1000, "noise": "none"}, float(t))
            for a, b, k, t in zip(m.axis1, m.axis2, m.methods, m.times, strict=True)]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler on this machine")
def test_hostile_labels_are_carried_not_run(tmp_path: Path) -> None:
    folder, studies, _ = write_decision(tmp_path / "d", hostile_runs(), ("nprocs", "n"), "ksp")
    index = json.loads((folder / "decision.json").read_text())
    sub = folder / index["maps"][0]["folder"]
    tree = studies.studies[0].chosen.tree

    lib = tmp_path / "decide.so"
    subprocess.run(["cc", "-std=c99", "-trigraphs", "-Wall", "-Werror", "-shared", "-fPIC",
                    "-o", str(lib), str(sub / "decide.c")], check=True)
    c = ctypes.CDLL(str(lib))
    labels = (ctypes.c_char_p * len(tree.methods)).in_dll(c, "ksptrace_decide_methods")
    assert [s.decode() for s in labels] == list(tree.methods)
    c.ksptrace_decide.restype = ctypes.c_int
    c.ksptrace_decide.argtypes = [ctypes.c_double, ctypes.c_double]

    spec = importlib.util.spec_from_file_location("decide_hostile", sub / "decide.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert tuple(mod.METHODS) == tree.methods
    for a in tree.axis1:
        for b in tree.axis2:
            assert c.ksptrace_decide(a, b) == mod.decide(a, b) == tree.query(a, b)

    opts = sorted((sub / "petsc-options").glob("*.opts")) if (sub / "petsc-options").exists() \
        else []
    for f in opts:
        tokens = [t for line in f.read_text().splitlines()
                  for t in line.split("#", 1)[0].split()]
        assert tokens == ["-ksp_type", "gmres"], f.read_text()
        assert f.name.endswith("-gmres.opts")
    refused = index["maps"][0].get("options_files_refused", [])
    assert refused
    assert all("PETSc type name" in r for r in refused)
    assert "PETSc type name" in (folder / "decision.html").read_text()
    if (sub / "next.toml").exists():
        parsed = tomllib.loads((sub / "next.toml").read_text())
        assert set(parsed["sweep"]["ksp"]) <= set(METHODS)
        assert parsed["sweep"]["problem"] == PROBLEM
    assert not Path("/tmp/ksptrace-pwned").exists()


def test_very_long_labels_are_drawn_cut(tmp_path: Path) -> None:
    """A 5000-character method name overflowed matplotlib's rasteriser (issue 27): the map and
    its figures are written, the label kept whole in the data and cut in the pictures."""
    long = "g" * 5000
    runs = [Run({**r.attrs, "ksp": long if r.attrs["ksp"] == "gmres" else "bcgs"}, r.seconds)
            for r in hostile_runs()]
    folder, *_ = write_decision(tmp_path / "d", runs, ("nprocs", "n"), "ksp")
    text = (folder / "decision.json").read_text()
    assert long in text
    pngs = list(folder.rglob("*.png"))
    assert pngs
    assert all(len(p.name) < 200 for p in folder.rglob("*"))
