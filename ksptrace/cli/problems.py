"""``ksptrace problems``: the registered problems and their own parameters."""

from __future__ import annotations

import argparse
from typing import Any

from ksptrace.errors import KsptraceError
from ksptrace.params import Param
from ksptrace.problems import registry


def register(sub: Any) -> None:
    p = sub.add_parser("problems")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    for name in registry.names():
        try:
            info = registry.get(name)
        except KsptraceError as exc:  # a broken installed entry point: named, the rest listed
            print(f"{name}: cannot be loaded: {exc}")
            continue
        print(f"{name}: {info.help}")
        for p in info.params:
            print(param_line(p))
    return 0


def param_line(p: Param) -> str:
    """A parameter's flag and help; its default when it has one (a parameter without one says
    in its help what stands in: ``chosen from --n``)."""
    default = "" if p.default is None else f" (default: {p.default})"
    return f"    {p.flag:<14} {p.help}{default}"
