"""One RRset change of a zone's plan: create, update or delete, with the RRset before and after. The
plan makes them; the UPDATE wire format and the writers read them."""

from __future__ import annotations

import dataclasses

from agent.model.ownership import Key
from agent.model.rrset import RRset


@dataclasses.dataclass(frozen=True, slots=True)
class RRChange:
    action: str  # "create" | "update" | "delete"
    before: RRset | None
    after: RRset | None

    @property
    def key(self) -> Key:
        rr = self.after or self.before
        assert rr is not None
        return rr.key
