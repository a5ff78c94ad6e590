"""The CLI's stderr, where every diagnostic goes, with what a repository wrote made harmless.

`main` runs every verb with sys.stderr wrapped in `Escaped`: whatever reaches it - problem lines,
errors carrying a path, a name or a git message, argparse's messages, log lines - has its control
and bidi characters escaped (agent/model/printable.py) and keeps its line breaks. A newline inside
one item (a problem, a failure) is escaped where the line is made (`printable.line`). stdout is data
(a plan, a report, YAML, JSON): each renderer escapes what it prints. Only the progress line, which
the CLI writes itself, reaches the terminal unescaped (`unescaped`)."""

from __future__ import annotations

import io
from typing import TextIO, cast

from agent.model import printable


class Escaped(io.TextIOBase):
    """A text stream that escapes what is written to it, then writes it to `raw`."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable.lines(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.raw, "encoding", None) or "utf-8")


def escaped(stream: TextIO) -> TextIO:
    """`stream`, escaping what is written to it (once: an escaped stream is returned as it is)."""
    return stream if isinstance(stream, Escaped) else cast(TextIO, Escaped(stream))


def unescaped(stream: TextIO) -> TextIO:
    """The stream under an escaped one, for the few bytes of terminal control the CLI writes itself."""
    return stream.raw if isinstance(stream, Escaped) else stream
