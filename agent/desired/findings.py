"""The problems found placing zones and records (pure): each at the line of the field it is about,
read from the object's file only when there is a problem (`Loaded.origin_at`).
"""

from __future__ import annotations

from agent.load.loaded import Loaded
from agent.model.key import ObjectKey
from agent.model.problems import Problem, Severity


class Findings:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, where: Loaded, path: str, message: str, severity: Severity = Severity.ERROR) -> None:
        self.problems.append(Problem(where.origin_at(path), str(where.key), path, message, severity))

    def failed(self, key: ObjectKey) -> bool:
        return any(p.obj == str(key) and p.severity is Severity.ERROR for p in self.problems)
