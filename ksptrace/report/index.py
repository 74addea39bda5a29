"""One page that links every page an output folder holds (the demo's ``index.html``), in the
report's look. Pure rendering; the caller writes the file."""

from __future__ import annotations

from collections.abc import Sequence

from ksptrace.report.templating import ENV
from ksptrace.version import __version__


def render_index(title: str, pages: Sequence[tuple[str, str, str]]) -> str:
    """``pages``: (relative address, name, what it holds), in reading order."""
    return ENV.get_template("index.html.j2").render(title=title, pages=list(pages),
                                                    version=__version__, home=None)
