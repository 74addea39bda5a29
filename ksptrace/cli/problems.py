"""``ksptrace problems``: the registered problems and their own parameters."""

from __future__ import annotations

import argparse
from typing import Any

from ksptrace.errors import KsptraceError
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
            print(f"    {p.flag:<14} {p.help} (default: {p.default})")
    return 0
