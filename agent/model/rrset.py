"""RRset: one owner name and type of a zone, its TTL and its values in presentation form - what Git
asks for (agent/desired/rrsets.py builds them), what a server serves (agent/observe/) and what a
plan changes. Defined in model/ so that what observe returns needs nothing of desired/ or plan/."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dns.rdata


@dataclasses.dataclass(frozen=True, slots=True)
class RRset:
    zone: str  # "example.com." (lowercase, absolute)
    name: str  # owner, absolute and lowercase: "www.example.com."
    rtype: str
    ttl: int
    rdatas: tuple[str, ...]  # sorted presentation forms
    # the parsed values, when known, so an UPDATE needs no second parse (not part of equality)
    objects: tuple[dns.rdata.Rdata, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.rtype)

    def relative_name(self) -> str:
        if self.name == self.zone:
            return "@"
        return self.name[: -len(self.zone) - 1]
