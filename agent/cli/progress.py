"""Progress of a run on stderr, one line per step, rewritten in place.

"loaded 10,000 files", "observed 100/500 zones", "applied 300/1,000 zones".

Only on a terminal: a pipe, a log file or CI output gets nothing. A step that ends within `KEEP`
seconds erases its line, so a quick run leaves nothing behind; a longer one leaves its last count.
The pure layers know nothing of it: the orchestrator and the reconcilers call back with counts, and
this module decides whether and how to show them.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

from agent.cli import terminal
from agent.model import printable

KEEP = 0.5  # seconds a step must take for its last count to stay on screen
INTERVAL = 0.1  # at most this often a line is rewritten


class Reporter:
    def __init__(self, stream: TextIO, *, enabled: bool, prefix: str = "") -> None:
        self.stream, self.enabled, self.prefix = stream, enabled, prefix
        self.step: tuple[str, str] | None = None
        self.started = self.written = 0.0
        self.line = ""  # the open line's text, once something was shown

    @classmethod
    def for_stderr(cls, prefix: str = "") -> Reporter:
        """A reporter on stderr, enabled on a terminal; log lines then first clear the progress
        line."""
        # its own line control passes; its text is escaped in _write
        stream = terminal.unescaped(sys.stderr)
        reporter = cls(stream, enabled=stream.isatty(), prefix=prefix)
        if reporter.enabled:
            for handler in logging.getLogger().handlers:
                handler.addFilter(reporter.interrupt)
        return reporter

    def interrupt(self, record: object = None) -> bool:
        """Clears the progress line so that something else can be printed; the next count redraws
        it."""
        if self.line:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.line = ""
        return True  # as a logging filter: let the record through

    def __call__(self, verb: str, unit: str, done: int, total: int | None) -> None:
        """One count of a step, e.g. ("applied", "zones", 300, 1000) -> "applied 300/1,000
        zones"."""
        if not self.enabled:
            return
        now = time.monotonic()
        if self.step != (verb, unit):
            self.done()
            self.step, self.started = (verb, unit), now
        counted = f"{done:,}/{total:,}" if total is not None else f"{done:,}"
        finished = total is not None and done >= total
        if finished or not self.line or now - self.written >= INTERVAL:
            self._write(f"{self.prefix}{verb} {counted} {unit}", now)

    def _write(self, line: str, now: float) -> None:
        self.stream.write("\r\x1b[K" + printable.line(line))
        self.stream.flush()
        self.line, self.written = line, now

    def done(self) -> None:
        """Ends the current step: a long one keeps its last count on screen, a short one is
        erased."""
        if self.line:
            keep = time.monotonic() - self.started >= KEEP
            self.stream.write("\n" if keep else "\r\x1b[K")
            self.stream.flush()
        self.step, self.line = None, ""
