"""The plan of one zone across its servers (pure): where it is created or removed, and its RRsets.

    desired instances    what the agent placed     -> placement change
    selected             not placed (or unsure)    -> create (idempotent: "exists" is fine)
    selected             placed, other role        -> delete, then create
    not selected         placed                    -> delete (the zone leaves that server)
    (secondaries changed)                          -> renotify: the primaries' also-notify list

RRsets are planned on every primary from its own AXFR (agent/plan/rrsetdiff.py). A run that was
killed while writing a zone left an intent (agent/model/ownership.py); `recover` turns it back
into ownership first: an RRset the intent was about to write that the server now holds with
exactly that data is the agent's, a placement it was about to make is made again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from agent.desired import adopt, rrsets
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.model.key import ObjectKey
from agent.model.names import FORCE_ANNOTATION, THRESHOLD_ANNOTATION
from agent.model.ownership import Intent, Key, ZoneOwnership, digest
from agent.plan import rrsetdiff
from agent.plan.observed import DnsObserved, ZoneObserved

GATE_ANNOTATIONS = (FORCE_ANNOTATION, THRESHOLD_ANNOTATION)


def instance_id(key: ObjectKey) -> str:
    return f"{key.namespace}/{key.name}"


@dataclasses.dataclass
class ZonePlan:
    name: str  # absolute
    zone: Zone | None  # the desired zone; None when it left Git
    primaries: list[str]  # instance ids selected as primaries / secondaries (desired)
    secondaries: list[str]
    creates: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (instance, role)
    deletes: list[str] = dataclasses.field(default_factory=list)  # instances the zone leaves
    renotify: list[str] = dataclasses.field(default_factory=list)  # primaries whose also-notify list changes
    records: dict[str, rrsetdiff.RRsetPlan] = dataclasses.field(default_factory=dict)  # primary -> RRset plan
    errors: dict[str, str] = dataclasses.field(default_factory=dict)  # instance -> why nothing can be done there
    managed_before: set[Key] = dataclasses.field(default_factory=set)
    managed_after: set[Key] = dataclasses.field(default_factory=set)
    placements_before: dict[str, str] = dataclasses.field(default_factory=dict)  # recovered
    placements_after: dict[str, str] = dataclasses.field(default_factory=dict)
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)  # gate annotations in force
    recovered: bool = False  # an interrupted run's intent was folded back in
    kept: str = ""  # a zone that left Git stays on its servers: why (it holds RRsets the agent did not write)
    observed: dict[str, ZoneObserved] = dataclasses.field(default_factory=dict)  # primary -> what it served
    revision: str | None = None  # the revision whose writes to this zone were last settled
    # found to have nothing to write or record (dnsapply): a plan reused for an unchanged zone is not
    # compared again (a settled plan is never changed, so the answer stays true)
    settled_once: bool = dataclasses.field(default=False, repr=False, compare=False)

    @property
    def key(self) -> ObjectKey | None:
        return self.zone.key if self.zone else None

    @property
    def blocked(self) -> bool:
        """No primary can be written: nothing is done to this zone in this run."""
        return bool(self.primaries) and all(p in self.errors for p in self.primaries)

    @property
    def removed_everywhere(self) -> bool:
        return self.zone is None or not (self.primaries or self.secondaries)

    @property
    def rrset_changes(self) -> list[rrsetdiff.RRChange]:
        """The RRset changes as a user sees them: those of the first primary that has a plan."""
        return next(iter(self.records.values())).changes if self.records else []

    @property
    def conflicts(self) -> list[str]:
        return next(iter(self.records.values())).conflicts if self.records else []

    @property
    def empty(self) -> bool:
        return not (self.creates or self.deletes or self.renotify or any(p.changes for p in self.records.values()))

    def intent(self) -> Intent:
        """What applying this plan may write: stored before the first write goes out."""
        intent = Intent(place={i: r for i, r in self.creates}, unplace=set(self.deletes))
        for plan in self.records.values():
            for change in plan.changes:
                if change.after is not None:
                    intent.writes[change.key] = digest(change.after.rdatas, change.after.ttl)
                else:
                    intent.deletes.add(change.key)
        return intent

    def in_flight(self) -> ZoneOwnership:
        """The ownership to store before the first write: what is known, plus this plan's intent."""
        return ZoneOwnership(self.name, dict(self.placements_before), set(self.managed_before),
                             dict(self.annotations), self.intent(), self.revision)

    def settled(self, revision: str | None = None) -> ZoneOwnership:
        """The ownership once every step of this plan went through (`revision`: the one applied, when
        this plan wrote anything)."""
        # an interrupted run's writes that landed count as this revision's: the zone now serves it
        written = revision if revision and (not self.empty or self.recovered) else self.revision
        return ZoneOwnership(self.name, dict(self.placements_after), set(self.managed_after), dict(self.annotations),
                             revision=written)


def recover(owned: ZoneOwnership, observed: list[ZoneObserved]) -> tuple[set[Key], dict[str, str], set[str]]:
    """Ownership with an interrupted run's intent folded in: (managed, placements, unsure instances)."""
    managed, placed = set(owned.managed), dict(owned.placements)
    pending = owned.pending
    if pending is None:
        return managed, placed, set()
    for key, wanted in pending.writes.items():
        for seen in observed:
            have = (seen.rrsets or {}).get(key)
            if have is not None and digest(have.rdatas, have.ttl) == wanted:
                managed.add(key)  # it went out: the agent wrote it
                break
    for instance, role in pending.place.items():
        placed.setdefault(instance, role)
    # a create or delete that may or may not have happened is simply made again (both are idempotent)
    return managed, placed, set(pending.place) | pending.unplace


def _gate_annotations(zone: Zone | None, owned: ZoneOwnership) -> dict[str, str]:
    if zone is None:  # the zone left Git: the annotations it had when last applied still count
        return dict(owned.annotations)
    return {k: v for k, v in zone.annotations.items() if k in GATE_ANNOTATIONS}


def _placements(plan: ZonePlan, placed: dict[str, str], unsure: set[str], seen: dict[str, ZoneObserved],
                reachable: set[str]) -> None:
    wanted = {**{s: "secondary" for s in plan.secondaries}, **{p: "primary" for p in plan.primaries}}
    for instance, role in wanted.items():
        if instance not in reachable:
            plan.errors[instance] = f"no endpoint for instance {instance}"
            continue
        observed = seen.get(instance)
        if role == "primary" and observed is not None and observed.error:
            plan.errors[instance] = observed.error
            continue
        was = placed.get(instance)
        if was is not None and was != role:
            plan.deletes.append(instance)
        missing = role == "primary" and observed is not None and observed.rrsets is None
        if was != role or instance in unsure or missing:
            plan.creates.append((instance, role))
    for instance in sorted(set(placed) - set(wanted)):
        if instance in reachable:
            plan.deletes.append(instance)
        else:
            plan.errors[instance] = f"no endpoint for instance {instance}: the zone stays there for now"
    previous = {i for i, r in placed.items() if r == "secondary"}
    if previous != set(plan.secondaries) and not plan.blocked:
        created = {i for i, _ in plan.creates}
        plan.renotify = [p for p in plan.primaries if p in placed and p not in created and p not in plan.errors]
    after = {i: r for i, r in placed.items() if i not in plan.deletes}
    after.update({i: r for i, r in plan.creates})
    plan.placements_after = after


def _records(plan: ZonePlan, managed: set[Key], seen: dict[str, ZoneObserved]) -> None:
    assert plan.zone is not None
    for primary in plan.primaries:
        if primary in plan.errors:
            continue
        observed = seen.get(primary)
        have = observed.rrsets if observed is not None and observed.rrsets is not None else {}
        result = rrsetdiff.plan_zone(plan.name, plan.zone.rrsets, have, managed)
        plan.records[primary] = result
        managed = result.managed_after
    plan.managed_after = managed


def _zone_own(zone: str, have: dict[Key, RRset]) -> Callable[[Key], bool]:
    """Whether an RRset belongs to the zone itself, made with it by the zone API or by BIND: the SOA,
    the apex NS, the glue (addresses) of name servers in that NS set, and the DNSSEC data BIND makes
    when it signs the zone. The NS set's names are read once per zone."""
    apex_ns = have.get((zone, "NS"))
    glue = {rrsets.absolute(v) for v in apex_ns.rdatas} if apex_ns is not None else set()

    def own(key: Key) -> bool:
        name, rtype = key
        return (rtype == "SOA" or (name == zone and rtype == "NS") or rtype in adopt.DNSSEC
                or (rtype in ("A", "AAAA") and name in glue))
    return own


def foreign(zone: str, have: dict[Key, RRset], managed: set[Key]) -> list[Key]:
    """The RRsets of a zone the agent did not write and that are not the zone's own (_zone_own)."""
    own = _zone_own(zone, have)
    return sorted(k for k in have if k not in managed and not own(k))


def leftovers(zone: str, have: dict[Key, RRset], managed: set[Key]) -> rrsetdiff.RRsetPlan:
    """A zone that left Git but stays (it holds foreign data): the deletes of the agent's own RRsets in it,
    the zone's own ones (SOA, apex NS, glue) excepted: they go with the zone."""
    own = _zone_own(zone, have)
    return rrsetdiff.plan_zone(zone, {}, have, {k for k in managed if not own(k)})


def _named(keys: list[Key], shown: int = 5) -> str:
    names = ", ".join(f"{n} {t}" for n, t in keys[:shown])
    return names + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def _keep_foreign(plan: ZonePlan, managed: set[Key], placed: dict[str, str], seen: dict[str, ZoneObserved]) -> bool:
    """A zone that left Git and that a primary serves with foreign data stays where it is; only the
    agent's RRsets in it are deleted. True if kept (the plan then says why in `kept`)."""
    primaries = [i for i, role in sorted(placed.items()) if role == "primary" and i in plan.deletes]
    unknown = [i for i in primaries if seen.get(i) is None or seen[i].error]
    if unknown:  # what it serves could not be read: nothing is deleted this run
        why = "; ".join(f"{i}: {seen[i].error if seen.get(i) is not None else 'not observed'}" for i in unknown)
        plan.kept = (f"zone kept on {len(placed)} server(s) although it left Git: what its primary serves could not "
                     f"be read ({why}), so it may hold data the agent did not write; it is deleted once it can be "
                     "checked (`--force` deletes it now)")
        return True
    found = sorted({k for i in primaries for k in foreign(plan.name, seen[i].rrsets or {}, managed)})
    if not found:
        return False
    for instance in primaries:
        have = seen[instance].rrsets
        if have is not None:
            plan.records[instance] = leftovers(plan.name, have, managed)
    plan.kept = (f"zone kept on {len(placed)} server(s) although it left Git: it holds {len(found)} RRset(s) the "
                 f"agent did not write ({_named(found)}); the agent's own RRsets in it are deleted; "
                 "`--force` deletes the zone with them")
    return True


def plan_zone(name: str, zone: Zone | None, dns: DnsObserved, *, force: bool = False) -> ZonePlan:
    """The whole plan of one zone (`zone` is None when the zone left Git: it is deleted from its servers,
    unless a primary serves RRsets in it that the agent did not write and `force` is not given)."""
    owned = dns.ownership.get(name) or ZoneOwnership(name)
    seen = dns.zones.get(name, {})
    managed, placed, unsure = recover(owned, list(seen.values()))
    primaries = [instance_id(k) for k in zone.primaries] if zone else []
    secondaries = [instance_id(k) for k in zone.secondaries] if zone else []
    plan = ZonePlan(name, zone, primaries, secondaries, managed_before=managed, placements_before=placed,
                    annotations=_gate_annotations(zone, owned), recovered=owned.pending is not None, observed=seen,
                    revision=owned.revision)
    _placements(plan, placed, unsure, seen, dns.reachable)
    if plan.blocked:  # nothing moves: keep what is known, including the interrupted run's intent
        plan.creates, plan.deletes, plan.renotify = [], [], []
        plan.placements_after, plan.managed_after = placed, managed
        return plan
    if zone is None and plan.deletes and not force and _keep_foreign(plan, managed, placed, seen):
        plan.deletes, plan.placements_after = [], dict(placed)
        deleted = {c.key for p in plan.records.values() for c in p.changes}
        plan.managed_after = managed - deleted
        return plan
    if zone is not None and primaries:
        _records(plan, managed, seen)
    elif not plan.placements_after:
        plan.managed_after = set()  # gone from every server: nothing is owned any more
    else:
        plan.managed_after = managed  # still on a server the agent cannot reach: keep ownership
    return plan

