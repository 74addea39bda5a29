"""Helpers shared by subcommands: turning declared parameters into argparse flags."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from ksptrace.params import Param


def add_params(parser: argparse.ArgumentParser, params: Iterable[Param]) -> None:
    """One flag per declared parameter; values are checked later by ``Param.check``."""
    for p in params:
        if p.type is bool:
            parser.add_argument(
                p.flag, dest=p.name, action=argparse.BooleanOptionalAction, default=None,
                help=f"{p.help} (default: {p.default})",
            )
        else:
            choices = f"; one of {', '.join(map(str, p.choices))}" if p.choices else ""
            parser.add_argument(
                p.flag, dest=p.name, default=None, metavar=p.name.upper(),
                help=f"{p.help} (default: {p.default}{choices})",
            )
