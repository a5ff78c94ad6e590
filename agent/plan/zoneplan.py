"""What the plan of one zone holds (pure data, frozen): its placements, the RRset changes per
primary, the zone API calls with the bodies they send, and the ownership before and after.

The diffs that fill it live in agent/plan/zonediff.py and rrsetdiff.py; agent/reconcile/ executes
it and never changes it (its results go into result objects).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.desired.placement import Zone
from agent.model.key import ObjectKey
from agent.model.observed import ZoneObserved
from agent.model.ownership import Intent, Key, ZoneOwnership, digest
from agent.model.rrchange import RRChange


@dataclasses.dataclass(frozen=True)
class RRsetPlan:
    """One primary's RRset changes; every UPDATE it sends carries its prerequisites."""

    zone: str
    changes: list[RRChange]
    conflicts: list[str]
    managed_after: set[Key]


@dataclasses.dataclass(frozen=True)
class Transfers:
    """Who a primary NOTIFYs and lets transfer the zone (the zone API's modify call): addresses with
    the DNS port, and bare addresses (None: named.conf's allow-transfer applies)."""

    also_notify: tuple[str, ...]
    allow_transfer: tuple[str, ...] | None

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"alsoNotify": list(self.also_notify)}
        if self.allow_transfer is not None:
            body["allowTransfer"] = list(self.allow_transfer)
        return body


@dataclasses.dataclass(frozen=True)
class ZonePlan:
    name: str  # absolute
    zone: Zone | None  # the desired zone; None when it left Git
    primaries: list[str]  # instance ids selected as primaries / secondaries (desired)
    secondaries: list[str]
    # creates, deletes, renotify, records, errors, observed, bodies and transfers are each server's:
    # an instance id, or "namespace/name@pod" for each pod of an instance written pod by pod
    # (`pods`)
    creates: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (server, role)
    deletes: list[str] = dataclasses.field(default_factory=list)  # servers the zone leaves
    # primaries whose also-notify list changes
    renotify: list[str] = dataclasses.field(default_factory=list)
    # primary server -> RRset plan
    records: dict[str, RRsetPlan] = dataclasses.field(default_factory=dict)
    # server or instance -> why nothing is done
    errors: dict[str, str] = dataclasses.field(default_factory=dict)
    managed_before: set[Key] = dataclasses.field(default_factory=set)
    managed_after: set[Key] = dataclasses.field(default_factory=set)
    placements_before: dict[str, str] = dataclasses.field(default_factory=dict)  # recovered
    placements_after: dict[str, str] = dataclasses.field(default_factory=dict)
    # gate annotations in force
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    recovered: bool = False  # an interrupted run's intent was folded back in
    # a zone that left Git stays on its servers: why (it holds RRsets the agent did not write)
    kept: str = ""
    # primary -> what it served
    observed: dict[str, ZoneObserved] = dataclasses.field(default_factory=dict)
    revision: str | None = None  # the revision whose writes to this zone last all went through
    # the zone API: the create body of each instance in `creates` (none in a plan made without the
    # servers' addresses, offline), why one cannot be made, and each primary's transfers (sent to
    # the `renotify` primaries, and to a primary that already had the zone when it is created)
    bodies: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    unbuildable: dict[str, str] = dataclasses.field(default_factory=dict)
    transfers: dict[str, Transfers] = dataclasses.field(default_factory=dict)
    # the secondaries' addresses the primaries NOTIFY: as last told, and as this plan tells them
    # (None: not known; a plan without the servers' addresses keeps what was known)
    notify_before: list[str] | None = None
    notify: list[str] | None = None
    # the primaries' addresses the secondaries transfer from: as they were last created with, and as
    # this plan gives them (None: not known). Where they differ, the secondary servers that have the
    # zone are in `repoint`: bindcar cannot change a zone's primaries, so apply deletes the zone
    # there and creates it again (they are in `creates` too); it transfers again, nothing is lost
    transfer_from_before: list[str] | None = None
    transfer_from: list[str] | None = None
    repoint: list[str] = dataclasses.field(default_factory=list)
    # primaries that refused the agent's AXFR: their allow-transfer is written again (the agent's
    # current addresses), then the zone is read and planned again (a second round)
    reopen: list[str] = dataclasses.field(default_factory=list)
    # the per-zone allow-transfer last given to the primaries, and the one this plan gives (None:
    # unchanged)
    allow_transfer_before: list[str] | None = None
    allow_transfer: list[str] | None = None
    # nothing to write and nothing new to record: most zones of most runs (apply only reports them)
    in_sync: bool = False
    # instance -> its servers, for the instances written pod by pod (the others are one server each)
    pods: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # instance -> why nothing is written to it yet (no pod at all: starting, scaled to 0; or a
    # secondary whose primaries all are): not a failure, its zones are written once its pods run
    waiting: dict[str, str] = dataclasses.field(default_factory=dict)
    # the servers in `creates` that are pods waiting for their zones (new, replaced): the agent's
    # own work
    fresh: frozenset[str] = frozenset()

    def servers_of(self, instance: str) -> tuple[str, ...]:
        return self.pods.get(instance, (instance,))

    @property
    def key(self) -> ObjectKey | None:
        return self.zone.key if self.zone else None

    @property
    def blocked(self) -> bool:
        """No primary can be written: nothing is done to this zone in this run."""
        return bool(self.primaries) and all(p in self.errors
                                            or all(s in self.errors for s in self.servers_of(p))
                                            for p in self.primaries)

    @property
    def removed_everywhere(self) -> bool:
        return self.zone is None or not (self.primaries or self.secondaries)

    @property
    def rrset_changes(self) -> list[RRChange]:
        """The RRset changes as a user sees them: each RRset written anywhere, once (a server that
        lacks it gets a create where another gets an update: the first primary's is shown)."""
        if len(self.records) == 1:
            return next(iter(self.records.values())).changes
        seen: dict[Key, RRChange] = {}
        for plan in self.records.values():
            for change in plan.changes:
                seen.setdefault(change.key, change)
        return [seen[k] for k in sorted(seen)]

    @property
    def conflicts(self) -> list[str]:
        if len(self.records) == 1:
            return next(iter(self.records.values())).conflicts
        return list(dict.fromkeys(c for plan in self.records.values() for c in plan.conflicts))

    @property
    def empty(self) -> bool:
        return not (self.creates or self.deletes or self.renotify or self.reopen
                    or any(p.changes for p in self.records.values()))

    def intent(self) -> Intent:
        """What applying this plan may write: stored before the first write goes out."""
        intent = Intent(place={i: r for i, r in self.creates}, unplace=set(self.deletes))
        for plan in self.records.values():
            for change in plan.changes:
                # the zone's own (agent/plan/soadiff.py): never the agent's
                if change.key[1] == "SOA":
                    continue
                if change.after is not None:
                    intent.writes[change.key] = digest(change.after.rdatas, change.after.ttl)
                else:
                    intent.deletes.add(change.key)
        return intent

    def in_flight(self) -> ZoneOwnership:
        """The ownership to store before the first write: what is known, plus this plan's intent."""
        return ZoneOwnership(self.name, dict(self.placements_before), set(self.managed_before),
                             dict(self.annotations), self.intent(), self.revision,
                             self.notify_before, self.transfer_from_before,
                             self.allow_transfer_before)

    def ownership_after(self, revision: str | None = None) -> ZoneOwnership:
        """The ownership once every step of this plan went through (`revision`: the one applied,
        when this plan wrote anything)."""
        # an interrupted run's writes that landed count as this revision's: the zone now serves it
        written = revision if revision and (not self.empty or self.recovered) else self.revision
        notify = self.notify if self.notify is not None else self.notify_before
        sources = (self.transfer_from if self.transfer_from is not None
                   else self.transfer_from_before)
        acl = self.allow_transfer if self.allow_transfer is not None else self.allow_transfer_before
        return ZoneOwnership(self.name, dict(self.placements_after), set(self.managed_after),
                             dict(self.annotations), revision=written, notify=notify,
                             transfer_from=sources, allow_transfer=acl)
