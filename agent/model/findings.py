"""What a plan or a run found, as records instead of strings: a refusal of the safety gate, a
conflict (something the agent will not overwrite), a conflict on one RRset, a failure of a write.
Each prints as the text a user reads today, so reports, notes, statuses and plans keep their
words."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Refusal:
    """The safety gate's refusal, of one zone (or of the whole plan: zone None)."""

    zone: str | None
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Conflict:
    """`subject: reason`: the subject is a zone name or an object key."""

    subject: str
    reason: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.reason}"


@dataclass(frozen=True)
class RRsetConflict:
    """An RRset that exists with data the agent did not write, so it is not overwritten."""

    owner: str
    rtype: str
    reason: str

    def __str__(self) -> str:
        return f"{self.owner} {self.rtype}: {self.reason}"


@dataclass(frozen=True)
class Failure:
    """`subject: message`: a write that failed."""

    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}"
