"""Helpers shared by subcommands: turning declared parameters into argparse flags."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from pathlib import Path

from ksptrace.errors import UsageError
from ksptrace.params import Param


def add_params(parser: argparse.ArgumentParser | argparse._ArgumentGroup, params: Iterable[Param],
               other_defaults: Mapping[str, str] | None = None) -> None:
    """One flag per declared parameter; values are checked later by ``Param.check``.
    ``other_defaults`` adds to a parameter's default where some cases differ (by name)."""
    for p in params:
        if p.type is bool:
            parser.add_argument(
                p.flag, dest=p.name, action=argparse.BooleanOptionalAction, default=None,
                help=f"{p.help} (default: {p.default})",
            )
        else:
            # a parameter without a default says in its help what happens when it is unset
            told = [f"default: {p.default}"] if p.default is not None else []
            if other_defaults and p.name in other_defaults:
                told[-1:] = [f"{(told or ['default: none'])[-1]}, {other_defaults[p.name]}"]
            told += [f"one of {', '.join(map(str, p.choices))}"] if p.choices else []
            parser.add_argument(
                p.flag, dest=p.name, default=None, metavar=p.name.upper(),
                help=f"{p.help} ({'; '.join(told)})" if told else p.help,
            )


def output_target(out: str) -> Path:
    """``out`` as given when it names an .h5 file; otherwise the folder, created if missing
    (the caller names the file in it)."""
    target = Path(out)
    if target.suffix == ".h5":
        return target
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create output folder {target}: {exc.strerror}") from None
    return target
