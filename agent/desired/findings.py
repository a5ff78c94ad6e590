"""The problems found placing zones and records (pure): each at the line of the field it is about,
read from the object's file only when there is a problem (`Loaded.origin_at`).
"""

from __future__ import annotations

from agent.load.loaded import Loaded
from agent.model.key import ObjectKey
from agent.model.problems import Problem, Severity


class Findings:
    def __init__(self) -> None:
        # appended to, never shortened (callers add lists of their own too)
        self.problems: list[Problem] = []
        self._failed: set[str] = set()  # the objects of the errors among problems[:_indexed]
        self._indexed = 0

    def add(self, where: Loaded, path: str, message: str,
            severity: Severity = Severity.ERROR) -> None:
        self.problems.append(Problem(where.origin_at(path), str(where.key), path, message,
                                     severity))

    def failed(self, key: ObjectKey) -> bool:
        """Whether an error is about the object: a set lookup (10,000 homeless records ask it 10,000
        times)."""
        new = self.problems[self._indexed:]
        self._failed.update(p.obj for p in new if p.severity is Severity.ERROR)
        self._indexed += len(new)
        return str(key) in self._failed
