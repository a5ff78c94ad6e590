"""The pure RRset plan of one zone and its ownership rules (no I/O).

    desired   observed                 managed?   -> change
    present   absent                   -          -> create
    present   equal (values and TTL)   -          -> nothing (and from now on managed)
    present   different                yes        -> update
    present   different                no         -> conflict: someone else's data, left alone
    absent    present                  yes        -> delete
    absent    present                  no         -> nothing (e.g. an ACME challenge TXT)

"managed" is what the agent wrote, and `own`: RRsets the DNSZone takes whoever wrote them, so that a
difference is an update, never a conflict. The caller (plan/zonediff.py) gives only the apex NS, and
on a server the zone is created on what the create writes (apex NS, IPv4 glue): other glue is like
any record, so foreign data at a name server's name stays a conflict. The SOA belongs to the zone
itself and is never planned here (agent/plan/soadiff.py keeps it as the DNSZone says).
"""

from __future__ import annotations

from agent.desired.rrsets import RRset
from agent.model.ownership import Key
from agent.model.rrchange import RRChange
from agent.plan.zoneplan import RRsetPlan


def rrset_plan(zone: str, desired: dict[Key, RRset], observed: dict[Key, RRset], managed: set[Key],
               own: set[Key] | frozenset[Key] = frozenset()) -> RRsetPlan:
    changes: list[RRChange] = []
    conflicts: list[str] = []
    # made a set at the end, sized for what it holds (half of one grown key by key)
    after: dict[Key, None] = {}
    for key in sorted(desired):
        want, have = desired[key], observed.get(key)
        if have is None:
            changes.append(RRChange("create", None, want))
            after[key] = None
        elif have.rdatas == want.rdatas and have.ttl == want.ttl:
            after[key] = None
        elif key in managed or key in own:
            changes.append(RRChange("update", have, want))
            after[key] = None
        else:
            conflicts.append(f"{key[0]} {key[1]}: exists with data the agent did not write "
                             f"({', '.join(have.rdatas)}); not overwritten")
    for key in sorted(managed - set(desired)):
        if key in observed:
            changes.append(RRChange("delete", observed[key], None))
    return RRsetPlan(zone, changes, conflicts, set(after))
