"""The variability study's user-visible choices, in a module that imports nothing heavy: the
command line offers them (``ksptrace analyze --help`` must not wait for scipy or matplotlib).
"""

from __future__ import annotations

DEFAULT_CANDIDATES: tuple[str, ...] = (
    "johnsonsu",
    "nct",
    "lognorm",
    "gamma",
    "norm",
    "genextreme",
    "exponweib",
)
"""The families the paper tried: Johnson SU first, non-central t second, and the usual others."""
INDEPENDENT_UNITS = ("nodes", "ranks")
"""What the analysis treats as independent: the nodes of a trace, or its ranks."""
CACHE_SUFFIX = ".cache"
"""The default cache folder is the report folder's name plus this suffix, beside it."""
