"""The report's templates: one jinja2 environment that escapes every value it prints."""

from __future__ import annotations

import jinja2

ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("ksptrace.report", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)
"""Autoescape is on for every template: text from a trace reaches HTML only escaped."""

