"""The one progress display of every long step (campaign runs, trace analysis).

On a terminal it is a tqdm bar: "<what> i of N", elapsed time and ETA, with the current item and
step beside it. In a log (not a terminal) it writes one timestamped line per finished item, so a
batch log reads as a history, not as redrawn bars.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm


def _clock(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


QUIET_VERDICTS = ("ok", "cached")
"""Verdicts that need no line of their own on a terminal bar."""

class Progress:
    """Progress over ``total`` items of a kind (``what``: "trace", "run").

    ``step(text)`` names the sub-step of the current item (shown on a terminal only);
    ``advance(item, verdict)`` counts one item as finished.
    """

    def __init__(self, total: int, what: str, stream: TextIO | None = None,
                 enabled: bool = True) -> None:
        self.total = total
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.done = 0
        self.started = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar: tqdm | None = None
        if enabled and self.tty:
            # tqdm only for a bar: a log, --quiet and every batch run do not import it (20 ms
            # of start-up on the PyPI stack's tqdm 4.70)
            from tqdm import tqdm

            self._bar = tqdm(total=total, file=self.stream, unit=what, leave=True,
                             dynamic_ncols=True,
                             bar_format=f"{{desc}} {what} {{n_fmt}} of {{total_fmt}} "
                                        "|{bar:20}| {elapsed} elapsed, ETA {remaining}")

    def step(self, text: str) -> None:
        """The current item's sub-step ("name: KS tests")."""
        if self._bar is not None:
            self._bar.set_description_str(text[:60], refresh=True)

    def advance(self, item: str, verdict: str = "ok") -> None:
        """One more item finished, with its verdict ("ok", "cached", "skipped: ...", "FAILED,
        see ..."); on a bar only the others get a line of their own."""
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            if verdict not in QUIET_VERDICTS:
                self._bar.write(f"{item}: {verdict}", file=self.stream)
            self._bar.update(1)
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{stamp} {self.what} {self.done} of {self.total} {item} {verdict} "
              f"(elapsed {_clock(elapsed)}, ETA {_clock(eta)})", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """A line that must not be overwritten by the bar (a skipped trace, a warning)."""
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
