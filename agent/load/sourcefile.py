"""A file of a revision: as a source hands it to the loader (`SourceFile`), and the text its objects
were loaded from, read again only when a problem needs a field's own line (`FileText`; keeping every
document's text cost 24 MB at 100,000 records). A cached file's objects are handed each revision's
file (`FileText.rebind`), so they never keep an old checkout's reader alive.
"""

from __future__ import annotations

from typing import Protocol

from agent.errors import FileRefused, SourceError


class SourceFile(Protocol):
    """One file of a revision, as a source (agent/sources/) hands it over."""

    @property
    def path(self) -> str:
        """Relative to the revision root, with '/' separators."""

    @property
    def size(self) -> int:
        """Its size in bytes as listed, known before reading (limits are checked against it)."""

    def read(self) -> bytes:
        """The file's bytes (at most `size`); raises FileRefused when it may not be read (a
        problem of that file), or SourceError / OSError when it cannot be."""


class FileText:
    """The text a file's objects were loaded from, read again only when a problem needs a field's
    own line (`Loaded.origin_at`)."""

    __slots__ = ("file", "_text")

    def __init__(self, file: SourceFile | str) -> None:
        self.file: SourceFile | str = file  # the file to read again, or the text itself
        self._text: str | None = file if isinstance(file, str) else None

    def rebind(self, file: SourceFile) -> None:
        # a long-running agent's source hands out the same file while it is unchanged
        if file is not self.file:
            self.file, self._text = file, None

    def text(self) -> str | None:
        """The file's text (read once, then kept), or None when it can no longer be read."""
        if self._text is None and not isinstance(self.file, str):
            try:
                self._text = self.file.read().decode("utf-8")
            except (FileRefused, SourceError, OSError, UnicodeDecodeError):
                return None
        return self._text
