"""Fuzzing the campaign parser: any input gives a valid spec or one CampaignError/UsageError line.

Three sources of input: arbitrary bytes, arbitrary text, and TOML documents built from the
declared keys (and near misses) with hostile values: control characters, huge and non-finite
numbers, wrong types, nested tables, empty lists. Bounded (a few seconds in all): at most a few
hundred examples and small lists, so that no sweep is large.
"""

from __future__ import annotations

import json
import math
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ksptrace.errors import CampaignError, UsageError
from ksptrace.harness.petsc.petsc_types import BUILTIN
from ksptrace.jobs.backends import get_backend
from ksptrace.jobs.campaign_file import control_character
from ksptrace.jobs.expand import load_spec
from ksptrace.jobs.schema import CAMPAIGN_KEYS, SCHEDULER_KEYS, SECTIONS, sweep_keys
from ksptrace.jobs.spec import CampaignSpec

FUZZ = settings(max_examples=150, deadline=timedelta(seconds=5), database=None,
                suppress_health_check=[HealthCheck.too_slow])

KEYS: dict[str, list[str]] = {
    "campaign": [p.name for p in CAMPAIGN_KEYS],
    "sweep": [p.name for p in sweep_keys()],
    "scheduler": [p.name for p in SCHEDULER_KEYS],
    "petsc_options": ["ksp_gmres_restart", "log_view", "ksp_monitor", "-pc_type"],
}
VALUES: dict[str, list[Any]] = {
    "problem": ["laplace1d", "iceflow"], "ksp": ["gmres", "cg", "gmers"], "pc": ["jacobi"],
    "nprocs": [1, 2], "n": [1000, 2000], "iterations": [5, 10], "name": ["fuzz", "a.b-c_d"],
    "walltime": ["00:10:00", "1-00:00:00", "99:99:99"], "zip": [[["n", "nprocs"]]],
    "hdf5_path": ["auto", "mpio"], "hom": ["A", "C"],
}


def outcome(path: Path) -> CampaignSpec | None:
    """load_spec's result, or None after one CampaignError/UsageError line (asserted)."""
    try:
        spec = load_spec(path, output=path.parent / "out", petsc=BUILTIN)
    except (CampaignError, UsageError) as exc:
        message = str(exc)
        assert message, "an error without a message"
        assert "\n" not in message, f"not one line: {message!r}"
        assert "\r" not in message, f"not one line: {message!r}"
        return None
    assert spec.runs, "a valid campaign with no run"
    assert len({r.run_id for r in spec.runs}) == len(spec.runs)
    assert len(spec.name.encode()) <= 200, "a campaign name too long for a file name"
    reach_scripts = [spec.name, *spec.command, *spec.scheduler.sbatch_directives,
                     *spec.scheduler.pbs_directives, str(spec.output)]
    for run in spec.runs:
        reach_scripts += [str(v) for _, v in run.params]
        reach_scripts += [x for option in run.petsc_options for x in option]
    for text in reach_scripts:
        assert control_character(text) is None, f"{text!r} reaches a script"
    for line in spec.setup:
        assert control_character(line, "\t") is None, f"set-up line {line!r}"
    return spec


def check(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "campaign.toml"
        path.write_bytes(data)
        spec = outcome(path)
        if spec is not None:
            for name in ("slurm", "pbs"):
                scripts = get_backend(name).render(spec, spec.runs)
                assert sum(len(s.runs) for s in scripts) == len(spec.runs)
                for s in scripts:
                    assert "\x00" not in s.text


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes(data: bytes) -> None:
    check(data)


@FUZZ
@given(st.text(max_size=400))
def test_any_text(text: str) -> None:
    check(text.encode("utf-8", "surrogatepass"))


def toml_value(value: Any) -> str:
    """A TOML literal for ``value`` (strings through JSON, whose escapes TOML shares)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(value)


HOSTILE_TEXT = st.text(alphabet=st.sampled_from(
    ["a", "Z", "0", "-", "_", ".", " ", ";", "$", "(", "'", '"', "\\", "\n", "\t", "\x00", "\x1b",
     "\x7f", "\x85", "é", "\u2028", "💥"]), max_size=12)
SCALARS = st.one_of(
    st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(),
    HOSTILE_TEXT, st.sampled_from(["gmres", "laplace1d", "", "01:00:00", "x" * 300]))


def values_for(key: str) -> st.SearchStrategy[Any]:
    known = VALUES.get(key, [])
    scalar = st.one_of(st.sampled_from(known), SCALARS) if known else SCALARS
    return st.one_of(scalar, st.lists(scalar, max_size=3),
                     st.dictionaries(st.sampled_from(["a", "b"]), scalar, max_size=2))


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines: list[str] = []
    sections = draw(st.lists(st.sampled_from([*SECTIONS, "sweeep", "Sweep"]), max_size=4,
                             unique=True))
    for section in sections:
        lines.append(f"[{section}]")
        names = KEYS.get(section, ["x"])
        keys = draw(st.lists(st.one_of(st.sampled_from(names), HOSTILE_TEXT.filter(bool)),
                             max_size=5, unique=True))
        for key in keys:
            lines.append(f"{json.dumps(key, ensure_ascii=False)} = "
                         f"{toml_value(draw(values_for(key)))}")
    return "\n".join(lines) + "\n"


@FUZZ
@given(documents())
@example('[campaign]\n"\\n" = false\n')  # found by this test: a two-line error
@example('[petsc_options]\nksp_gmres_restart = "\\u001b"\n')  # found: ESC reached a script
@example('[sweep]\nksp = "gm\\u0000res"\n')  # issue 9: bash drops the NUL byte
@example(f'[campaign]\nname = "{"a" * 300}"\n')  # issue 9: "File name too long"
def test_structured_documents(text: str) -> None:
    check(text.encode())


def test_the_generator_reaches_valid_campaigns() -> None:
    """The structured strategy is not all errors: a document of known keys loads."""
    text = ("[campaign]\nname = \"fuzz\"\n[sweep]\nksp = [\"gmres\", \"cg\"]\nn = 1000\n"
            "[scheduler]\nwalltime = \"00:10:00\"\n")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "campaign.toml"
        path.write_text(text)
        spec = outcome(path)
    assert spec is not None
    assert len(spec.runs) == 2
