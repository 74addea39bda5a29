"""Writing traces in the schema-1 layout, as ksptrace did before schema 2, to test that they are
still read: every attribute on the file's root, host names NUL-padded ``S64``, no dimension
scales. ``tests/data/trace/schema1.h5`` was written by that old code itself."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from ksptrace.trace.model import Trace

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "trace" / "schema1.h5"
"""A schema-1 trace written by ksptrace before schema 2: 3 ranks, 6 iterations, injected
noise, an attribute of every group, and host names 'host-a', 'höst-b' and 70 'h's (kept: 64)."""


def write_schema1(trace: Trace, path: Path) -> Path:
    """Write ``trace`` to ``path`` in the flat schema-1 layout; returns ``path``."""
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = 1
        for key, value in trace.attrs.items():
            if key != "schema_version":
                f.attrs[key] = value
        if trace.injected_seconds is not None:
            f.create_dataset("injected_seconds", data=trace.injected_seconds)
        f.create_dataset("stamps", data=trace.stamps)
        f.create_dataset("iteration_seconds", data=trace.iteration_seconds)
        f.create_dataset("residual_norms", data=trace.residual_norms)
        f.create_dataset("node_ids", data=trace.node_ids)
        f.create_dataset("hostnames", data=np.array(
            [h.encode()[:64] for h in trace.hostnames], dtype="S64"))
        f.create_dataset("solve_seconds", data=trace.solve_seconds)
    return path
