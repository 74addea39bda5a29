"""The report's templates: one jinja2 environment that escapes every value it prints.

Compiling the seven templates of a report takes about 30 ms, every run (2 % of a 20-trace
analysis without figures); their compiled code is therefore kept in this user's private cache
folder (:mod:`ksptrace.cachedir`) and read back, 1 ms. Compiled code is run when it is read
back, so it is kept as the analysis cache keeps its entries
(:mod:`ksptrace.studies.variability.sealed`): in a private folder, each entry a file of this
user sealed with an HMAC under this user's key, so that nothing another user could have
written is ever loaded. jinja2 checks each cached template against its source and the Python
version; the entry's name adds jinja2's version and ENV_OPTIONS, so that no other jinja2 or
environment reads it. A cache that cannot be used, read or written is no error: the template
is compiled, as without a cache.
"""

from __future__ import annotations

import hashlib

import jinja2

from ksptrace.cachedir import cache_dir
from ksptrace.studies.variability import (
    SealedCache,
    open_sealed_cache,
    sealed_load,
    sealed_store,
)

TEMPLATE_FOLDER = "templates"
"""The compiled templates' folder inside :func:`ksptrace.cachedir.cache_dir`."""
ENV_OPTIONS = {"autoescape": True, "trim_blocks": True, "lstrip_blocks": True,
               "undefined": jinja2.StrictUndefined}


class PrivateBytecodeCache(jinja2.BytecodeCache):
    """jinja2's compiled templates as entries of a sealed cache (:mod:`.sealed`) in the private
    folder, opened at the first template."""

    def __init__(self) -> None:
        self._cache: SealedCache | None = None
        self._looked = False
        tag = f"{jinja2.__version__}|{sorted((k, repr(v)) for k, v in ENV_OPTIONS.items())}"
        self.suffix = f"-{hashlib.sha256(tag.encode()).hexdigest()[:16]}.template"

    def cache(self) -> SealedCache | None:
        """The sealed cache in the private folder (made if missing), or None."""
        if not self._looked:
            self._looked = True
            opened = open_sealed_cache(cache_dir() / TEMPLATE_FOLDER)
            self._cache = None if isinstance(opened, str) else opened
        return self._cache

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        cache = self.cache()
        data = None if cache is None else sealed_load(cache, bucket.key + self.suffix)
        if isinstance(data, bytes):
            try:
                bucket.bytecode_from_string(data)
            except Exception:  # a damaged entry: compile the template
                bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        cache = self.cache()
        if cache is not None:
            sealed_store(cache, bucket.key + self.suffix, bucket.bytecode_to_string())


ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("ksptrace.report", "templates"),
    bytecode_cache=PrivateBytecodeCache(),
    **ENV_OPTIONS,  # type: ignore[arg-type]
)
"""Autoescape is on for every template: text from a trace reaches HTML only escaped."""
