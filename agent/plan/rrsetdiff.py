"""The pure RRset plan of one zone and its ownership rules (no I/O).

    desired   observed                 managed?   -> change
    present   absent                   -          -> create
    present   equal (values and TTL)   -          -> nothing (and from now on managed)
    present   different                yes        -> update
    present   different                no         -> conflict: someone else's data, left alone
    absent    present                  yes        -> delete
    absent    present                  no         -> nothing (e.g. an ACME challenge TXT)

The SOA, and the apex NS unless Git declares it, belong to the zone itself, not to records.
"""

from __future__ import annotations

import dataclasses

from agent.desired.rrsets import RRset
from agent.model.ownership import Key


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


@dataclasses.dataclass
class RRsetPlan:
    zone: str
    changes: list[RRChange]
    conflicts: list[str]
    managed_after: set[Key]


def plan_zone(zone: str, desired: dict[Key, RRset], observed: dict[Key, RRset], managed: set[Key]) -> RRsetPlan:
    changes: list[RRChange] = []
    conflicts: list[str] = []
    after: set[Key] = set()
    for key in sorted(desired):
        want, have = desired[key], observed.get(key)
        if have is None:
            changes.append(RRChange("create", None, want))
            after.add(key)
        elif have.rdatas == want.rdatas and have.ttl == want.ttl:
            after.add(key)
        elif key in managed:
            changes.append(RRChange("update", have, want))
            after.add(key)
        else:
            conflicts.append(f"{key[0]} {key[1]}: exists with data the agent did not write "
                             f"({', '.join(have.rdatas)}); not overwritten")
    for key in sorted(managed - set(desired)):
        if key in observed:
            changes.append(RRChange("delete", observed[key], None))
    return RRsetPlan(zone, changes, conflicts, after)
