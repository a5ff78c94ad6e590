"""Problems found in a revision: where (file:line, object, field path) and what, with a severity.

Every check in the loader and in desired-state validation reports a `Problem` instead of raising,
so a user sees all of them at once, formatted as ``file:line: Kind/ns/name: field.path: message``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import NamedTuple

from agent.model import printable


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Origin(NamedTuple):
    """Where a document came from: a path relative to the revision root, and a 1-based line. (A
    tuple underneath: one is made for every document of a revision, and ordered, compared and
    hashed in C.)"""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclasses.dataclass(frozen=True)
class Problem:
    origin: Origin | None
    obj: str  # "Kind/namespace/name", "Kind/name", or "" when no object could be identified
    path: str  # dotted field path such as "spec.soaRecord.primaryNs", or ""
    message: str
    severity: Severity = Severity.ERROR

    def __str__(self) -> str:
        parts = [str(self.origin) if self.origin else "<generated>"]
        if self.obj:
            parts.append(self.obj)
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return printable.line(": ".join(parts))  # one line, whatever the repository wrote

    def sort_key(self) -> tuple[str, int, str, str]:
        o = self.origin
        return (o.file if o else "~", o.line if o else 0, self.path, self.message)

    def as_dict(self) -> dict[str, object]:
        return {
            "file": self.origin.file if self.origin else None,
            "line": self.origin.line if self.origin else None,
            "object": self.obj or None,
            "path": self.path or None,
            "message": self.message,
            "severity": self.severity.value,
        }


def errors(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity is Severity.ERROR]


def warnings(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity is Severity.WARNING]


def sorted_problems(problems: Iterable[Problem]) -> list[Problem]:
    return sorted(problems, key=Problem.sort_key)
