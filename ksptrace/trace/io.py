"""Trace files in one import: the public reading and writing API.

``from ksptrace.trace.io import read_trace`` is what the README and the docs show, and what
user scripts rely on. The work is done by modules with one concern each:

- :mod:`ksptrace.trace.layout`: the HDF5 layout (datasets, axes, attribute groups);
- :mod:`ksptrace.trace.write`: the serial writer (an image in memory, then one atomic publish);
- :mod:`ksptrace.trace.publish`: destination and space checks, the atomic publish;
- :mod:`ksptrace.trace.checks`: what a file must pass before any data are read;
- :mod:`ksptrace.trace.fields`: an open file read into the fields of a :class:`Trace`;
- :mod:`ksptrace.trace.shared_read`: the forked child that reads into shared memory;
- :mod:`ksptrace.trace.read`: the validating reader built on them.
"""

from __future__ import annotations

from ksptrace.trace.checks import check_finite
from ksptrace.trace.read import attrs_of, iter_traces, read_trace
from ksptrace.trace.write import write_trace

__all__ = ["attrs_of", "check_finite", "iter_traces", "read_trace", "write_trace"]
