"""Lazy public surfaces for the study packages.

A study package names what the report may use in its ``__init__.py``. Importing those names
eagerly would import the whole study (matplotlib, scipy, pandas) whenever any one of its
modules is imported, ``ksptrace analyze --help`` included. So a package lists its public names
with the module that defines each, imports them only for type checkers, and hands
:func:`lazy` to Python as its module ``__getattr__`` (PEP 562): a name's module is imported the
first time the name is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy(package: str, public: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` serving ``public``: name -> (module, name in
    it), the module relative to the package."""

    def getattr_(name: str) -> Any:
        try:
            module, attr = public[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        return getattr(importlib.import_module(f"{package}.{module}"), attr)

    return getattr_
