"""Text from a repository made safe to show: the one place that escapes it for a terminal.

A revision's author writes names, keys, values, messages and commit subjects that end up in
problem lines, the text plan, `report`, sync's lines and log lines. Shown raw, an ESC starts a
control sequence (clear the screen, an OSC 8 hyperlink, a window title), a carriage return or a
backspace overwrites what came before, a newline forges a line of its own, and a bidi override
(U+202A-U+202E, U+2066-U+2069) reorders what a reader sees. Every character Python does not call
printable - C0 and C1 controls, DEL, format characters (bidi controls, zero-width ones), line and
paragraph separators, spaces other than ' ', unassigned code points - is shown as the escape
Python writes for it (`\\n`, `\\r`, `\\t`, `\\x1b`, `\\x9b`, `\\u202e`), and an undecodable byte of
a file name as `\\xff`. A backslash is left as it is (TXT values and DNS names use it), so escaping
twice changes nothing.

`line` escapes one line (a newline too); `lines` keeps the line breaks of a text made of lines,
and is what the CLI's stderr passes everything through (agent/cli/terminal.py).
"""

from __future__ import annotations


def line(text: str) -> str:
    """`text` as one line a terminal shows as written: every character that is not printable
    escaped."""
    # the usual case; a surrogate escape (an undecodable byte) is not printable
    if text.isprintable():
        return text
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def lines(text: str) -> str:
    """`text` with its line breaks kept and every other character that is not printable escaped."""
    return "\n".join(map(line, text.split("\n")))
