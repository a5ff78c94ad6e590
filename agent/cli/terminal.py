"""The CLI's stderr, where every diagnostic goes, with what a repository wrote made harmless.

`main` runs every verb with sys.stderr wrapped in `Escaped`: whatever reaches it - problem lines,
errors carrying a path, a name or a git message, argparse's messages, log lines - has its control
and bidi characters escaped (agent/model/printable.py) and keeps its line breaks. A newline inside
one item (a problem, a failure) is escaped where the line is made (`printable.line`). stdout is data
(a plan, a report, YAML, JSON): each renderer escapes what it prints. Only the progress line, which
the CLI writes itself, reaches the terminal unescaped (`unescaped`).

Colours, only where a person reads: on a terminal, unless NO_COLOR is set (to anything but "") or
TERM is "dumb". Errors are red and warnings yellow on stderr (`Escaped` knows them by how they
start, or is told: `write`); a text plan's + ~ - lines are green, yellow and red, ! red and ? yellow
(`plan_stream`). The colour codes are added after escaping, so they are the only ones that pass."""

from __future__ import annotations

import io
import os
import re
from typing import TextIO, cast

from agent.model import printable

RED, GREEN, YELLOW, RESET = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[0m"
STYLES = {"error": RED, "warning": YELLOW}
_ERROR_LINE = re.compile(r"(?:bindy-agent[\w -]*: )?(?:internal )?error\b|.*: invalid\b")
_WARNING_LINE = re.compile(r"(?:bindy-agent[\w -]*: )?(?:warning|note)\b")
PLAN_SIGNS = {"+": GREEN, "~": YELLOW, "-": RED, "!": RED, "?": YELLOW}


def colour(stream: TextIO) -> bool:
    """Whether to colour what is written to `stream`: a terminal, no NO_COLOR, not a dumb one."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _painted(text: str, code: str) -> str:
    return f"{code}{text}{RESET}" if text else text


class Escaped(io.TextIOBase):
    """A text stream that escapes what is written to it, then writes it to `raw`."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw
        self.colour = colour(raw)
        self.line_start = True

    def write(self, text: str) -> int:
        return self.write_styled(text, None)

    def write_styled(self, text: str, style: str | None) -> int:
        """`text` escaped; on a terminal, coloured as `style` says, or as each line's start says."""
        shown = printable.lines(text)
        if self.colour and shown:
            shown = self._coloured(shown, style)
        if shown:
            self.line_start = shown.endswith("\n")
        self.raw.write(shown)
        return len(text)

    def _coloured(self, text: str, style: str | None) -> str:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if i == 0 and not self.line_start:
                continue  # the rest of a line whose start was written (and coloured) before
            code = STYLES.get(style or "") or (RED if _ERROR_LINE.match(line) else
                                               YELLOW if _WARNING_LINE.match(line) else None)
            if code:
                lines[i] = _painted(line, code)
        return "\n".join(lines)

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


def write(stream: TextIO, text: str, style: str) -> None:
    """`text` to `stream`, in the colour of `style` ("error", "warning") when the stream colours."""
    if isinstance(stream, Escaped):
        stream.write_styled(text, style)
    else:
        stream.write(text)


class PlanLines(io.TextIOBase):
    """A text plan on a terminal: each change line coloured by its sign (+ ~ - ! ?)."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write("\n".join(map(_plan_line, text.split("\n"))))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def writable(self) -> bool:
        return True


def _plan_line(line: str) -> str:
    body = line.lstrip(" ")
    code = PLAN_SIGNS.get(body[:1]) if body[1:2] == " " else None
    return line[:len(line) - len(body)] + _painted(body, code) if code else line


def plan_stream(stream: TextIO) -> TextIO:
    """`stream` for a text plan: coloured on a terminal (`colour`), else as it is."""
    return cast(TextIO, PlanLines(stream)) if colour(stream) else stream


def escaped(stream: TextIO) -> TextIO:
    """`stream`, escaping what is written to it (once: an escaped stream is returned as it is)."""
    return stream if isinstance(stream, Escaped) else cast(TextIO, Escaped(stream))


def unescaped(stream: TextIO) -> TextIO:
    """The stream under an escaped one, for the few bytes of terminal control the CLI writes
    itself."""
    return stream.raw if isinstance(stream, Escaped) else stream
