"""What applying a plan's DNS part did: each zone's result, the run's, and the bookkeeping on them.

A zone's result holds what happened on each server (configured, failed, removed), the RRset changes
the zone now serves (`changes`; `written`: those of a zone that stopped part-way), the verification
checks, and why it stopped (`primary_error`, `stale`, ...). `served` turns the servers' states into
each instance's (what the DNSZone status lists); `union` and `landed` carry what a zone that stopped
part-way serves into the next round and into the messages; `merge_round` puts the second round's
outcome (the zones found stale, planned and applied again) in place of the first's. Filled in by
agent/reconcile/dnsapply.py; read by agent/run/ and agent/outcome/.
"""

from __future__ import annotations

import dataclasses

from agent.clients import rfc2136
from agent.model.key import ObjectKey
from agent.model.observed import ZoneObserved
from agent.model.rrchange import RRChange
from agent.model.servers import instance_of
from agent.plan.zoneplan import ZonePlan

AGAIN = "observed and planned again, it changed again; the next run tries again"


@dataclasses.dataclass
class ZoneResult:
    key: ObjectKey | None
    name: str
    # id -> (state, message)
    instances: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    # server -> (state, message)
    servers: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    # instance written pod by pod -> (pods that serve the zone: configured and answering what was
    # written, pods it was written to)
    served: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    primaries: set[str] = dataclasses.field(default_factory=set)  # instance ids in the primary role
    primary_error: str = ""
    secondary_error: str = ""
    refused: str = ""  # the second round's plan of this zone was refused by the gate
    stale: str = ""  # an UPDATE's prerequisite failed: the zone changed since it was observed (why)
    conflicts: list[str] = dataclasses.field(default_factory=list)
    # the RRset changes the zone now serves
    changes: list[RRChange] = dataclasses.field(default_factory=list)
    # a zone that stopped part-way (a prerequisite failed, an UPDATE failed): the RRset changes
    # whose UPDATE a primary took before, each once (also in `changes`); empty when every batch went
    written: list[RRChange] = dataclasses.field(default_factory=list)
    # primary servers that took the changes
    applied_on: list[str] = dataclasses.field(default_factory=list)
    checks: list[rfc2136.Check] = dataclasses.field(default_factory=list)
    created_on: list[str] = dataclasses.field(default_factory=list)
    deleted_from: list[str] = dataclasses.field(default_factory=list)
    # primary -> what it now serves
    after: dict[str, ZoneObserved] = dataclasses.field(default_factory=dict)
    revision: str | None = None  # the revision whose writes this zone serves (None: not known)

    @property
    def ok(self) -> bool:
        return not (self.primary_error or self.secondary_error or self.refused or self.stale)


@dataclasses.dataclass
class DnsResult:
    zones: list[ZoneResult]  # the zones Git places
    deleted: list[tuple[str, str]]  # (zone, instance) the zone was removed from
    updates_sent: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    # zone -> why: an UPDATE prerequisite failed (someone changed the zone since it was observed);
    # nothing more was written there, its intent stays stored: observe, plan, gate and apply it
    # again
    stale: dict[str, str] = dataclasses.field(default_factory=dict)
    verify_seconds: float = 0.0  # of the apply's wall time, how long verification took
    # server -> the zones it answered an SOA for after the writes (a waiting pod is not asked again)
    answered: dict[str, set[str]] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(z.ok for z in self.zones) and not self.errors


def union(first: list[RRChange], then: list[RRChange]) -> list[RRChange]:
    """The RRset changes of `first`, then those of `then` that are not among them."""
    if not first:
        return list(then)
    seen = set(first)
    return [*first, *(c for c in then if c not in seen)]


def landed(written: list[RRChange], shown: int = 5) -> str:
    """What a zone that stopped part-way serves of its plan all the same, for the message saying it
    stopped."""
    if not written:
        return ""
    names = ", ".join(f"{c.key[0]} {c.key[1]} ({c.action})" for c in written[:shown])
    more = f" and {len(written) - shown} more" if len(written) > shown else ""
    return f"; written before it stopped, and served: {len(written)} RRset change(s): {names}{more}"


def served(zp: ZonePlan, result: ZoneResult) -> None:
    """Each instance's state from its servers' (`result.instances`, what the DNSZone status lists):
    Configured when every server is, else Failed with what failed where; and, for an instance
    written pod by pod, on how many pods the zone is served (configured, and answering what was
    written)."""
    missed = {c.server for c in result.checks if not c.ok}
    by_instance: dict[str, list[tuple[str, tuple[str, str]]]] = {}
    for server, state in result.servers.items():
        by_instance.setdefault(instance_of(server), []).append((server, state))
    for instance, states in by_instance.items():
        failed = [(s, m) for s, (st, m) in states if st == "Failed"]
        pods = zp.pods.get(instance)
        ok = sum(1 for s in pods or ()
                 if result.servers.get(s, ("", ""))[0] == "Configured" and s not in missed)
        if pods is not None:
            result.served[instance] = (ok, len(pods))
        if failed:
            named = (m if s == instance or m.startswith(s) else f"{s}: {m}" for s, m in failed)
            result.instances[instance] = ("Failed", "; ".join(named))
        elif pods is not None:
            first, message = states[0][1]
            result.instances[instance] = (first, f"{message}, served by {ok}/{len(pods)} pods")
        else:
            result.instances[instance] = states[0][1]


def merge_round(first: DnsResult, second: DnsResult, refused: dict[str, str]) -> None:
    """The second round's outcome in place of the first's, for the zones it took (`refused`: each
    zone the gate refused then, and why). What the first round wrote of a zone stays written:
    said."""
    by_name = {z.name: z for z in second.zones}
    for i, zone in enumerate(first.zones):
        if zone.name in refused:
            # what the first round wrote before it stopped stays written: say so
            zone.stale, zone.refused = "", refused[zone.name] + landed(zone.written)
        elif zone.name in by_name:
            earlier, zone = zone, by_name[zone.name]
            zone.written = union(earlier.written, zone.written)
            zone.changes = union(earlier.written, zone.changes)
            first.zones[i] = zone
        if zone.stale:  # changed again while written a second time
            zone.primary_error = (f"records not applied: {zone.stale} ({AGAIN})"
                                  f"{landed(zone.written)}")
            zone.stale = ""
    placed = {z.name for z in first.zones}
    first.deleted = sorted(set(first.deleted) | set(second.deleted))
    first.updates_sent += second.updates_sent
    for server, zones in second.answered.items():  # answered after the second round's writes too
        first.answered.setdefault(server, set()).update(zones)
    first.errors += second.errors
    first.errors += [f"zone {name}: refused after it changed while being written: {why}"
                     for name, why in refused.items() if name not in placed]
    first.errors += [f"zone {name}: records not applied: {why} ({AGAIN})"
                     for name, why in second.stale.items() if name not in placed]
    first.stale = {}
