"""Where ksptrace keeps what it can recompute: a folder per user, never inside a campaign."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "KSPTRACE_CACHE_DIR"
"""Overrides the cache folder (default ``$XDG_CACHE_HOME/ksptrace`` or ``~/.cache/ksptrace``)."""


def cache_dir() -> Path:
    """The cache folder (not created here: a cache that cannot be written is no error)."""
    base = os.environ.get(CACHE_ENV)
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "ksptrace"
