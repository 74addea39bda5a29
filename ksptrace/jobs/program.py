"""Campaigns of user programs: the ``[program]`` table of a ``kind = "program"`` campaign.

A program campaign sweeps a user's command, traced by ``ksptrace trace``: the command is an
argument list (never a shell string) whose words may hold placeholders ``{name}``, each
replaced by the run's value of the sweep key ``name`` (``{nprocs}`` is P); ``{{`` and ``}}``
stand for literal braces. Every placeholder must name a sweep key and every sweep key but
``nprocs`` must be used by a placeholder, so that no axis varies nothing. Pure: templates in,
argument lists out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ksptrace.errors import CampaignError
from ksptrace.params import Param

PROGRAM_KEYS: tuple[Param, ...] = (
    Param("command", list, [], "the program and its arguments, a list of strings; {key} is "
          "replaced by the run's value of the sweep key (nprocs or one of your own)"),
    Param("depth", int, None, "record solves down to this depth (ksptrace trace --depth)",
          minimum=1),
    Param("ksp_prefix", str, None, "record only the KSPs with this options prefix "
          "(ksptrace trace --ksp-prefix)"),
    Param("with_setup", bool, False, "also record the set-up solves (ksptrace trace "
          "--with-setup)"),
)

AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""The names of a program campaign's own sweep keys (placeholders)."""

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


def placeholders(word: str, where: str) -> list[str]:
    """The placeholder names in one word of the command; a malformed one is a CampaignError."""
    names = []
    for m in _TOKEN.finditer(word):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        name = m.group(1)
        if name is None or not AXIS_NAME.fullmatch(name):
            raise CampaignError(f"{where}: command word {word!r} holds {token!r}, not a "
                                "placeholder {name} of a sweep key; write {{ and }} for "
                                "literal braces")
        names.append(name)
    return names


def fill(word: str, values: Mapping[str, Any]) -> str:
    """``word`` with each ``{name}`` replaced by ``values[name]`` (checked words only)."""
    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return str(values[m.group(1)])
    return _TOKEN.sub(one, word)


def check_axis(key: str, value: Any, where: str) -> tuple[Any, ...]:
    """A program campaign's own sweep key: a placeholder name, strings or numbers."""
    if not AXIS_NAME.fullmatch(key) or key in ("argv", "trace_flags"):
        raise CampaignError(f"{where}: sweep key {key!r} cannot be a placeholder of the "
                            "command; use letters, digits and '_' (not first a digit), and "
                            "not argv or trace_flags")
    values = value if isinstance(value, list) else [value]
    if not values:
        raise CampaignError(f"{where}: '{key}' is an empty list; give at least one value")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise CampaignError(f"{where}: '{key}' values must be strings or numbers (they "
                                f"become words of the command), got {v!r}")
    return tuple(values)


def check_command(command: Any, sweep: Mapping[str, Sequence[Any]], where: str) -> tuple[str, ...]:
    """The command template, checked against the sweep's keys."""
    if isinstance(command, str):
        raise CampaignError(f"{where}: command must be a list of strings, e.g. [\"./app\", "
                            "\"-ksp_type\", \"{ksp}\"], not a shell line (nothing in it is "
                            "split or expanded)")
    if not isinstance(command, list) or not command or \
            not all(isinstance(w, str) for w in command):
        raise CampaignError(f"{where}: command must be a non-empty list of strings, e.g. "
                            "[\"./app\", \"-ksp_type\", \"{ksp}\"] (an argument list, not a "
                            "shell line)")
    if not command[0].strip():
        raise CampaignError(f"{where}: the command's first word (the program) is empty")
    used: set[str] = set()
    for word in command:
        for name in placeholders(word, where):
            if name not in sweep and name != "nprocs":
                known = ", ".join(sorted(sweep)) or "none"
                raise CampaignError(f"{where}: placeholder {{{name}}} names no sweep key "
                                    f"(keys in [sweep]: {known}); add {name} = [...] to "
                                    "[sweep] or write {{ and }} for literal braces")
            used.add(name)
    unused = sorted(k for k in sweep if k != "nprocs" and k not in used)
    if unused:
        raise CampaignError(f"{where}: sweep key {unused[0]!r} is used by no placeholder in "
                            f"command; add {{{unused[0]}}} to the command or remove the key")
    return tuple(command)


def argv(template: Sequence[str], values: Mapping[str, Any], base: Path | None) -> list[str]:
    """The run's command: placeholders filled; a relative program path with a slash
    (``./app``, ``bin/app``) made absolute against ``base``, the campaign file's folder."""
    words = [fill(w, values) for w in template]
    program = words[0]
    if base is not None and "/" in program and not Path(program).is_absolute():
        words[0] = str((base / program).absolute())
    return words


def trace_flags(program: Mapping[str, Any]) -> list[str]:
    """The ``ksptrace trace`` flags of the ``[program]`` table's selection keys."""
    flags = []
    if program.get("depth") is not None:
        flags += ["--depth", str(program["depth"])]
    if program.get("ksp_prefix") is not None:
        flags += ["--ksp-prefix", str(program["ksp_prefix"])]
    if program.get("with_setup"):
        flags.append("--with-setup")
    return flags
