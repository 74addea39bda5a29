"""Reading a campaign file and checking it against :mod:`.schema`: every error names the file,
the line and the key, and suggests the nearest valid key. Everything that would fail after
queueing is refused here: unknown KSP and PC names, control characters, names too long to
become file names. Pure apart from reading the file.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ksptrace.errors import CampaignError, KsptraceError
from ksptrace.harness.petsc.petsc_types import BUILTIN, PetscTypes
from ksptrace.inputs import read_bounded
from ksptrace.jobs.program import PROGRAM_KEYS, check_axis, check_command
from ksptrace.jobs.schema import (
    CAMPAIGN_BYTES,
    CAMPAIGN_KEYS,
    KEY_ALIASES,
    MAX_CAMPAIGN_NAME,
    NAME_MAX,
    OPTION_NAME,
    SAFE_NAME,
    SCHEDULER_KEYS,
    SECTIONS,
    CampaignFile,
    location,
    parse_walltime,
    sweep_keys,
)
from ksptrace.jobs.spec import PROGRAM, SOLVER
from ksptrace.params import Param, nearest
from ksptrace.problems import registry


def unknown_key(where: str, key: str, valid: Iterable[str], what: str) -> CampaignError:
    valid = sorted(valid)
    near = nearest(key, valid, KEY_ALIASES)
    hint = f"did you mean '{near}'? " if near else ""
    return CampaignError(f"{where}: unknown {what} {key!r}; {hint}valid: {', '.join(valid)}")


def unknown_type(where: str, kind: str, name: str, petsc: PetscTypes) -> CampaignError:
    """A KSP or PC type PETSc does not know, with the nearest one it does."""
    valid = sorted(petsc.ksp if kind == "KSP" else petsc.pc)
    near = nearest(name, valid)
    hint = f"did you mean '{near}'? " if near else ""
    return CampaignError(f"{where}: unknown {kind} type {name!r}; {hint}valid types in "
                         f"{petsc.source}: {', '.join(valid)}")


def control_character(text: str, allowed: str = "") -> str | None:
    """A description of the first control character in ``text`` (None when there is none)."""
    for i, ch in enumerate(text):
        if ch not in allowed and unicodedata.category(ch) == "Cc":
            return f"{ch!r} (U+{ord(ch):04X}) at character {i + 1}"
    return None


def _check_text(data: Any, path: Path, text: str, section: str | None = None,
                key: str | None = None) -> None:
    """Refuse control characters in every key and string of the file, lists included.

    They end up in scripts and file names, where bash drops a NUL byte and a newline or escape
    changes what runs; set-up lines (shell by intent) may hold a tab."""
    if isinstance(data, dict):
        for name, value in data.items():
            where = (location(path, text, name) if section is None
                     else location(path, text, section, key or name))
            found = control_character(name)
            if found:
                raise CampaignError(f"{where}: the name {name!r} holds a control character "
                                    f"{found}; remove it")
            if section is None:
                _check_text(value, path, text, name)
            else:
                _check_text(value, path, text, section, key or name)
    elif isinstance(data, list):
        for value in data:
            _check_text(value, path, text, section, key)
    elif isinstance(data, str):
        found = control_character(data, "\t" if (section, key) == ("campaign", "setup") else "")
        if found:
            where = location(path, text, section or "", key)
            raise CampaignError(
                f"{where}: '{key}' holds a control character {found}; remove it (it would reach "
                "a job script or a file name, where bash drops NUL bytes and other controls "
                "change what runs)")


def _check(param: Param, value: Any, where: str) -> Any:
    """Param.check, plus lists of strings; errors carry the file and line."""
    if param.type is list:
        if not isinstance(value, list):
            raise CampaignError(f"{where}: '{param.name}' must be a list, got {value!r}")
        return value
    if param.type in (int, float) and isinstance(value, bool):
        raise CampaignError(f"{where}: '{param.name}' must be {param.type.__name__}, got {value!r}")
    if param.type is str and not isinstance(value, str) and value is not None:
        raise CampaignError(f"{where}: '{param.name}' must be a string, got {value!r}")
    try:
        return param.check(value, where)
    except KsptraceError as exc:
        raise CampaignError(str(exc)) from None


def _table(data: Mapping[str, Any], section: str, path: Path, text: str) -> dict[str, Any]:
    table = data.get(section, {})
    if not isinstance(table, dict):
        raise CampaignError(f"{location(path, text, section)}: [{section}] must be a table")
    return table


def _resolve_table(
    table: Mapping[str, Any], params: tuple[Param, ...], section: str, path: Path, text: str
) -> dict[str, Any]:
    known = {p.name: p for p in params}
    out: dict[str, Any] = {}
    for key in table:
        if key not in known:
            raise unknown_key(location(path, text, section, key), key, known, f"key in [{section}]")
    for p in params:
        where = location(path, text, section, p.name)
        out[p.name] = _check(p, table[p.name], where) if p.name in table else p.default
    return out


def _toml_message(path: Path, text: str, message: str) -> str:
    """``file:line: malformed TOML: ...`` from tomllib's ``... (at line L, column C)``."""
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if m:
        return (f"{path}:{m.group(1)}: malformed TOML: {message[:m.start()]} "
                f"(column {m.group(2)}); fix the file and retry")
    line = len(text.splitlines()) or 1
    message = re.sub(r"\s*\(at end of document\)$", " at the end of the file", message)
    return f"{path}:{line}: malformed TOML: {message}; fix the file and retry"


def load_campaign_file(path: str | Path, petsc: PetscTypes | None = BUILTIN) -> CampaignFile:
    """Read and check a campaign file. Every fault is one CampaignError naming file and line.

    KSP and PC names are checked against ``petsc`` (see
    :func:`ksptrace.harness.petsc.petsc_types.current`); None leaves them to the caller
    (:func:`check_types`), e.g. until the sweep's size is known.
    """
    path = Path(path)
    raw = read_bounded(path, CAMPAIGN_BYTES, "campaign file", CampaignError)
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except RecursionError:
        raise CampaignError(f"{path}: nested too deeply for a campaign file (tables or arrays "
                            "inside each other hundreds of levels deep); flatten it") from None
    except UnicodeDecodeError:
        raise CampaignError(f"{path}: not UTF-8 text; save the campaign file as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(_toml_message(path, text, str(exc))) from None

    _check_text(data, path, text)
    for section in data:
        if section not in SECTIONS:
            raise unknown_key(location(path, text, section), section, SECTIONS, "table")

    campaign = _resolve_table(_table(data, "campaign", path, text), CAMPAIGN_KEYS, "campaign",
                              path, text)
    scheduler = _resolve_table(_table(data, "scheduler", path, text), SCHEDULER_KEYS, "scheduler",
                               path, text)
    sweep = _check_sweep(_table(data, "sweep", path, text), path, text, campaign["kind"])
    options = _check_options(_table(data, "petsc_options", path, text), path, text)

    _check_campaign(campaign, sweep, path, text)
    _check_scheduler(scheduler, path, text)
    program = _check_program(data, campaign["kind"], sweep, path, text)
    cf = CampaignFile(path=path, text=text, campaign=campaign, sweep=sweep,
                      petsc_options=options, scheduler=scheduler, program=program)
    if petsc is not None:
        check_types(cf, petsc)
    return cf


def check_types(cf: CampaignFile, petsc: PetscTypes) -> None:
    """Every KSP and PC name of the sweep must be one of ``petsc``'s (a program campaign's
    keys are its own placeholders, whatever their names)."""
    if cf.campaign.get("kind") == PROGRAM:
        return
    for kind, names in (("KSP", petsc.ksp), ("PC", petsc.pc)):
        for name in cf.sweep.get(kind.lower(), ()):
            if name not in names:
                raise unknown_type(cf.where("sweep", kind.lower()), kind, name, petsc)


def _check_sweep(table: Mapping[str, Any], path: Path, text: str,
                 kind: str = SOLVER) -> dict[str, tuple[Any, ...]]:
    problems = table.get("problem", []) if kind == SOLVER else []
    for name in problems if isinstance(problems, list) else [problems]:
        if isinstance(name, str):  # load user problems first: their parameters are keys
            try:
                registry.get(name)
            except KsptraceError as exc:
                raise CampaignError(f"{location(path, text, 'sweep', 'problem')}: {exc}") from None
    known = {p.name: p for p in sweep_keys(kind)}
    out: dict[str, tuple[Any, ...]] = {}
    for key, value in table.items():
        where = location(path, text, "sweep", key)
        if kind == PROGRAM and key not in known:
            out[key] = check_axis(key, value, where)
            continue
        if key not in known:
            raise unknown_key(where, key, known, "key in [sweep]")
        values = value if isinstance(value, list) else [value]
        if not values:
            raise CampaignError(f"{where}: '{key}' is an empty list; give at least one value")
        checked = tuple(_check(known[key], v, where) for v in values)
        if key == "problem":
            for name in checked:
                try:
                    registry.get(name)
                except KsptraceError as exc:
                    raise CampaignError(f"{where}: {exc}") from None
        out[key] = checked
    return out


def _check_program(data: Mapping[str, Any], kind: str, sweep: Mapping[str, tuple[Any, ...]],
                   path: Path, text: str) -> dict[str, Any] | None:
    """The ``[program]`` table: required with kind = 'program', refused otherwise."""
    where = location(path, text, "program")
    if kind != PROGRAM:
        if "program" in data:
            raise CampaignError(f"{where}: [program] needs kind = \"program\" in [campaign]; "
                                "add it, or remove [program]")
        return None
    if "program" not in data:
        raise CampaignError(f"{location(path, text, 'campaign', 'kind')}: kind = \"program\" "
                            "needs a [program] table with command = [\"./app\", ...]")
    raw = _table(data, "program", path, text)
    where = location(path, text, "program", "command")
    if isinstance(raw.get("command"), str):  # a shell line: its own message
        check_command(raw["command"], sweep, where)
    table = _resolve_table(raw, PROGRAM_KEYS, "program", path, text)
    table["command"] = check_command(table["command"], sweep, where)
    return table


def _check_options(table: Mapping[str, Any], path: Path, text: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for key, value in table.items():
        where = location(path, text, "petsc_options", key)
        name = key.lstrip("-")
        if not OPTION_NAME.fullmatch(name):
            raise CampaignError(f"{where}: '{key}' is not a PETSc option name (letters, digits, _)")
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str | int | float):
            raise CampaignError(f"{where}: PETSc option '{key}' must be a string or a number")
        out.append((name, str(value)))
    return tuple(out)


def _check_campaign(
    campaign: dict[str, Any], sweep: Mapping[str, tuple[Any, ...]], path: Path, text: str
) -> None:
    where = location(path, text, "campaign", "name")
    if not SAFE_NAME.fullmatch(campaign["name"]):
        raise CampaignError(f"{where}: name {campaign['name'][:60]!r} may hold only letters, "
                            "digits, '.', '_' and '-', starting with a letter or digit (it "
                            "becomes the scheduler job name)")
    if len(campaign["name"]) > MAX_CAMPAIGN_NAME:
        raise CampaignError(f"{where}: name is {len(campaign['name'])} characters long; use at "
                            f"most {MAX_CAMPAIGN_NAME} (it becomes file names, and a file name "
                            f"has at most {NAME_MAX} bytes)")
    where = location(path, text, "campaign", "output")
    for part in Path(campaign["output"]).parts:
        if len(part.encode()) > NAME_MAX:
            raise CampaignError(f"{where}: output folder name {part[:40]!r}... is "
                                f"{len(part.encode())} bytes long; a file name has at most "
                                f"{NAME_MAX} bytes, shorten it")
    where = location(path, text, "campaign", "setup")
    for line in campaign["setup"]:
        if not isinstance(line, str) or "\n" in line:
            raise CampaignError(f"{where}: each set-up line must be a one-line string")
    where = location(path, text, "campaign", "zip")
    groups: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for group in campaign["zip"]:
        if not isinstance(group, list) or len(group) < 2 or not all(isinstance(k, str)
                                                                    for k in group):
            raise CampaignError(f"{where}: each zip group is a list of two or more sweep keys")
        lengths = set()
        for key in group:
            if key not in sweep:
                raise unknown_key(where, key, sweep, "sweep key in zip")
            if key in seen:
                raise CampaignError(f"{where}: '{key}' is in more than one zip group")
            seen.add(key)
            lengths.add(len(sweep[key]))
        if len(lengths) != 1:
            detail = ", ".join(f"{k}: {len(sweep[k])}" for k in group)
            raise CampaignError(f"{where}: zipped keys need lists of one length ({detail})")
        groups.append(tuple(group))
    campaign["zip"] = tuple(groups)
    campaign["setup"] = tuple(campaign["setup"])


def _check_scheduler(scheduler: dict[str, Any], path: Path, text: str) -> None:
    for key in ("partition", "account"):
        value = scheduler[key]
        if value is not None and not SAFE_NAME.fullmatch(value):
            raise CampaignError(f"{location(path, text, 'scheduler', key)}: {key} {value!r} may "
                                "hold only letters, digits, '.', '_' and '-'")
    where = location(path, text, "scheduler", "walltime")
    scheduler["walltime_seconds"] = parse_walltime(scheduler["walltime"], where)
    for key in ("sbatch_directives", "pbs_directives"):
        where = location(path, text, "scheduler", key)
        for line in scheduler[key]:
            if not isinstance(line, str) or "\n" in line or not line.strip():
                raise CampaignError(f"{where}: each of {key} must be a non-empty one-line string")
        scheduler[key] = tuple(scheduler[key])
