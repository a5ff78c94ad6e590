"""A source that records which revision a run reads: the head (`snapshot`) or the one that serves (`at`)."""

from __future__ import annotations


class _Source:
    """Which revision a run reads: the head (`snapshot`) or the one that serves (`at`)."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def snapshot(self) -> str:
        self.read.append("head")
        return "head"

    def at(self, sha: str) -> str:
        self.read.append(f"at {sha[:4]}")
        return "serving"
