"""What ``ksptrace decide`` maps by default, in a module that imports nothing heavy (the
command line shows these in ``--help``)."""

from __future__ import annotations

DEFAULT_AXES = ("nprocs", "n")
"""The two numeric axes of a map: process count and problem size."""
DEFAULT_METHOD = "ksp"
"""The trace attribute whose values compete in each cell."""
