"""The plan of one zone across its servers (pure): where it is created or removed, and its RRsets.

    desired instances    what the agent placed     -> placement change
    selected             not placed (or unsure)    -> create (idempotent: "exists" is fine)
    selected             placed, other role        -> delete, then create
    not selected         placed                    -> delete (the zone leaves that server)
    (secondaries or agent pods moved)              -> renotify: the primaries' transfers written
                                                   again
    (primaries' pods moved)                        -> repoint: each secondary's zone created again

An instance may be served by several pods, each its own server (own zone list, own SOA serial):
placements and ownership are the instance's, creates, deletes and RRset plans each server's, so a
pod without the zone (new, or restarted with an empty emptyDir) gets it created and every RRset
written. RRsets are planned on every primary server from its own AXFR (agent/plan/rrsetdiff.py); on
a server the zone is created on, from what the create writes (the DNSZone's apex NS and IPv4 glue).
A difference is an update, never a conflict (`own`), only for the DNSZone's apex NS and, on a server
the zone is created on, for what the create writes: other glue is the agent's only once it wrote it
(or the create did, in an earlier run), so foreign data at a name server's name stays a conflict. A
run that was killed while writing a zone left an intent (agent/model/ownership.py); `recover` turns
it back into ownership first: an RRset the intent was about to write that a server now holds with
exactly that data is the agent's, unless another server (pod) holds other data there (the run was
killed between pods, one of which held foreign data: that conflict stays one, on every pod); a
placement it was about to make is made again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from agent.desired import adopt, nameservers, rrsets
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.model.names import FORCE_ANNOTATION, THRESHOLD_ANNOTATION
from agent.model.observed import DnsObserved, Reach, ZoneObserved
from agent.model.ownership import Key, ZoneOwnership, digest
from agent.model.servers import instance_id, instance_of
from agent.plan import rrsetdiff, soadiff, zonecalls, zoneplan
from agent.plan.zoneplan import ZonePlan

GATE_ANNOTATIONS = (FORCE_ANNOTATION, THRESHOLD_ANNOTATION)


def recover(owned: ZoneOwnership,
            observed: list[ZoneObserved]) -> tuple[set[Key], dict[str, str], set[str]]:
    """Ownership with an interrupted run's intent folded in: (managed, placements, unsure
    instances)."""
    managed, placed = set(owned.managed), dict(owned.placements)
    pending = owned.pending
    if pending is None:
        return managed, placed, set()
    for key, wanted in pending.writes.items():
        held = {digest(have.rdatas, have.ttl) for seen in observed
                if (have := (seen.rrsets or {}).get(key)) is not None}
        if held == {wanted}:  # it went out and no server holds other data there: the agent wrote it
            managed.add(key)
        # else: not written, or a server (pod) holds data the agent did not write there: that
        # server's conflict stays one, and the key stays unmanaged on every server
    # the intent names servers (`namespace/name@pod`); placements are the instances'
    for server, role in pending.place.items():
        placed.setdefault(instance_of(server), role)
    # a create or delete that may or may not have happened is simply made again (both are
    # idempotent)
    return managed, placed, {instance_of(s) for s in (*pending.place, *pending.unplace)}


def _gate_annotations(zone: Zone | None, owned: ZoneOwnership) -> dict[str, str]:
    if zone is None:  # the zone left Git: the annotations it had when last applied still count
        return dict(owned.annotations)
    return {k: v for k, v in zone.annotations.items() if k in GATE_ANNOTATIONS}


@dataclasses.dataclass
class _Placement:
    errors: dict[str, str]
    creates: list[tuple[str, str]]  # (server, role)
    deletes: list[str]  # servers
    renotify: list[str]  # primary servers
    after: dict[str, str]  # instance -> role
    # primary servers that refused the agent's AXFR
    reopen: list[str] = dataclasses.field(default_factory=list)
    # instance -> why it has no server yet
    waiting: dict[str, str] = dataclasses.field(default_factory=dict)


def _placements(primaries: list[str], secondaries: list[str], placed: dict[str, str],
                unsure: set[str], seen: dict[str, ZoneObserved], dns: DnsObserved) -> _Placement:
    """Placements are the instances' (what the agent owns); creates, deletes and errors are each
    server's: every pod of an instance is written on its own, and one without the zone (new, or
    restarted empty) gets it created again."""
    out = _Placement({}, [], [], [], {})
    wanted = {**{s: "secondary" for s in secondaries}, **{p: "primary" for p in primaries}}
    failed: set[str] = set()  # instances none of whose servers can be written
    # no primary to transfer from yet
    held = bool(primaries) and all(p in dns.starting for p in primaries)
    for instance, role in wanted.items():
        if instance in dns.starting or (held and role == "secondary"):  # no pod yet: not a failure
            out.waiting[instance] = (dns.starting.get(instance)
                                     or "waiting for its primaries to start")
            continue
        if instance not in dns.reachable:
            out.errors[instance] = f"no endpoint for instance {instance}"
            failed.add(instance)
            continue
        if not _place_servers(out, instance, role, placed.get(instance), instance in unsure, seen,
                              dns):
            failed.add(instance)
    _unplace(out, placed, wanted, dns)
    _settle(out, primaries, secondaries, placed, failed, dns)
    return out


def _place_servers(out: _Placement, instance: str, role: str, was: str | None, unsure: bool,
                   seen: dict[str, ZoneObserved], dns: DnsObserved) -> bool:
    """The zone created (and deleted first, when its role changes) on each server of a reachable
    instance that needs it; a primary server whose zone cannot be read is an error. False when none
    of the instance's servers can be written."""
    servers = dns.servers_of(instance)
    for server in servers:
        observed = seen.get(server)
        if role == "primary" and observed is not None and observed.error:
            out.errors[server] = observed.error
            if observed.refused and was == "primary" and _lists_the_agent(dns, instance):
                # its allow-transfer gets the agent's address; read again
                out.reopen.append(server)
            continue
        if was is not None and was != role:
            out.deletes.append(server)
        missing = observed is not None and observed.rrsets is None
        if was != role or unsure or missing:
            out.creates.append((server, role))
    return not all(s in out.errors for s in servers)


def _unplace(out: _Placement, placed: dict[str, str], wanted: dict[str, str],
             dns: DnsObserved) -> None:
    """The instances the zone leaves: deleted from each of their servers; one with no endpoint
    keeps it for now (an error), one with no pod yet has nothing to delete it from."""
    for instance in sorted(set(placed) - set(wanted)):
        if instance in dns.reachable:
            out.deletes += dns.servers_of(instance)
        elif instance not in dns.starting:  # no pod: nothing to delete it from
            out.errors[instance] = (f"no endpoint for instance {instance}: the zone stays there "
                                    f"for now")


def _settle(out: _Placement, primaries: list[str], secondaries: list[str], placed: dict[str, str],
            failed: set[str], dns: DnsObserved) -> None:
    """The placement's primaries told to notify again (the secondaries changed and one of them can
    be written), and the instances' roles after it."""
    previous = {i for i, r in placed.items() if r == "secondary"}
    blocked = bool(primaries) and all(p in failed for p in primaries)
    if previous != set(secondaries) and not blocked:
        created = {i for i, _ in out.creates}
        out.renotify = [s for p in primaries if p in placed and p not in out.waiting
                        for s in dns.servers_of(p)
                        if s not in created and s not in out.errors]
    deleted = {instance_of(s) for s in out.deletes}
    out.after = {i: r for i, r in placed.items() if i not in deleted}
    out.after.update({instance_of(s): r for s, r in out.creates})


def _records(name: str, zone: Zone, primaries: list[str], errors: dict[str, str], managed: set[Key],
             seen: dict[str, ZoneObserved],
             dns: DnsObserved) -> tuple[dict[str, zoneplan.RRsetPlan], set[Key]]:
    """Each primary server's RRset plan from what it serves, all against the same ownership: an
    RRset stays the agent's only while no server holds other data in it (a conflict there)."""
    records: dict[str, zoneplan.RRsetPlan] = {}
    after: set[Key] | None = None
    apex, created = {(name, "NS")}, nameservers.created(zone)
    for primary in primaries:
        for server in dns.servers_of(primary):
            if server in errors or primary in errors:
                continue
            observed = seen.get(server)
            if observed is not None and observed.rrsets is not None:
                have, own = observed.rrsets, apex
            # a server without the zone gets it created first: its apex NS and IPv4 glue come with
            # it
            else:
                have, own = created, apex | set(created)
            result = rrsetdiff.rrset_plan(name, zone.rrsets, have, managed, own)
            # the SOA follows soaRecord (not on a create)
            if (soa := soadiff.change(zone, have)) is not None:
                result = dataclasses.replace(result, changes=[*result.changes, soa])
            records[server] = result
            # the first server's set itself (never changed in place: 100,000 keys need no copy)
            after = result.managed_after if after is None else after & result.managed_after
    return records, managed if after is None else after


def _zone_own(zone: str, have: dict[Key, RRset]) -> Callable[[Key], bool]:
    """Whether an RRset belongs to the zone itself, made with it by the zone API or by BIND: the
    SOA, the apex NS, the glue (addresses) of name servers in that NS set, and the DNSSEC data BIND
    makes when it signs the zone. The NS set's names are read once per zone."""
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


def leftovers(zone: str, have: dict[Key, RRset], managed: set[Key]) -> zoneplan.RRsetPlan:
    """A zone that left Git but stays (it holds foreign data): the deletes of the agent's own RRsets
    in it, the zone's own ones (SOA, apex NS, glue) excepted: they go with the zone."""
    own = _zone_own(zone, have)
    return rrsetdiff.rrset_plan(zone, {}, have, {k for k in managed if not own(k)})


def _named(keys: list[Key], shown: int = 5) -> str:
    names = ", ".join(f"{n} {t}" for n, t in keys[:shown])
    return names + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def _keep_foreign(name: str, deletes: list[str], managed: set[Key], placed: dict[str, str],
                  seen: dict[str, ZoneObserved]) -> tuple[str, dict[str, zoneplan.RRsetPlan]]:
    """A zone that left Git and that a primary serves with foreign data stays where it is; only the
    agent's RRsets in it are deleted. Returns why it is kept ("" if it is not) and those deletes."""
    primaries = [s for s in deletes if placed.get(instance_of(s)) == "primary"]
    unknown = [i for i in primaries if seen.get(i) is None or seen[i].error]
    if unknown:  # what it serves could not be read: nothing is deleted this run
        why = "; ".join(f"{i}: {seen[i].error if seen.get(i) is not None else 'not observed'}"
                        for i in unknown)
        return (f"zone kept on {len(placed)} server(s) although it left Git: what its primary "
                f"serves could not be read ({why}), so it may hold data the agent did not write; "
                "it is deleted once it can be checked (`--force` deletes it now)"), {}
    found = sorted({k for i in primaries for k in foreign(name, seen[i].rrsets or {}, managed)})
    if not found:
        return "", {}
    records = {i: leftovers(name, have, managed) for i in primaries
               if (have := seen[i].rrsets) is not None}
    return (f"zone kept on {len(placed)} server(s) although it left Git: it holds {len(found)} "
            f"RRset(s) the agent did not write ({_named(found)}); the agent's own RRsets in it are "
            "deleted; `--force` deletes the zone with them"), records


def _lists_the_agent(dns: DnsObserved, instance: str) -> bool:
    """Whether the zone's allow-transfer on `instance` is the agent's to write (a per-zone ACL with
    the agent's own addresses, not named.conf's)."""
    reach = dns.servers.get(instance)
    return reach is not None and bool(reach.transfer_acl)


def _calls(zone: Zone | None, primaries: list[str], secondaries: list[str],
           creates: list[tuple[str, str]], renotify: list[str],
           servers: dict[str, Reach]) -> dict[str, Any]:
    """The zone API bodies this plan sends (none without the servers' addresses: an offline
    plan)."""
    bodies: dict[str, dict[str, Any]] = {}
    unbuildable: dict[str, str] = {}
    if zone is None or not servers:
        return {"bodies": bodies, "unbuildable": unbuildable, "transfers": {}}
    for instance, role in creates:
        body = zonecalls.create_body(zone, instance, role, primaries, secondaries, servers)
        if isinstance(body, str):
            unbuildable[instance] = body
        else:
            bodies[instance] = body
    told = {i for i, role in creates
            if role == "primary"} | set(renotify) if secondaries else set(renotify)
    return {"bodies": bodies, "unbuildable": unbuildable,
            "transfers": {p: zonecalls.transfers(p, secondaries, servers) for p in sorted(told)}}


def _notify(zone: Zone | None, secondaries: list[str], dns: DnsObserved) -> list[str] | None:
    """The addresses the zone's primaries NOTIFY (None: unknown, a plan without the servers'
    addresses)."""
    if zone is None or not dns.servers:
        return None
    return sorted(a for s in secondaries if s in dns.servers for a in dns.servers[s].addresses)


def _acl(zone: Zone | None, primaries: list[str], secondaries: list[str],
         dns: DnsObserved) -> list[str] | None:
    """The per-zone allow-transfer its primaries get: the secondaries' pods and every replica of the
    agent (None: named.conf's ACL applies, or a plan without the servers' addresses)."""
    if zone is None or not primaries or not dns.servers:
        return None
    sent = zonecalls.transfers(primaries[0], secondaries, dns.servers).allow_transfer
    return None if sent is None else list(sent)


def _tell(primaries: list[str], placed: dict[str, str], creates: list[tuple[str, str]],
          errors: dict[str, str], renotify: list[str], dns: DnsObserved) -> list[str]:
    """`renotify` and every other primary server that has the zone and is not being created."""
    created = {s for s, _ in creates}
    told = [s for p in primaries if p in placed for s in dns.servers_of(p) if s not in created
            and s not in errors]
    return sorted(set(renotify) | set(told))


def _repoint(zone: Zone | None, primaries: list[str], secondaries: list[str],
             placed: dict[str, str], errors: dict[str, str], seen: dict[str, ZoneObserved],
             before: list[str] | None, dns: DnsObserved) -> tuple[list[str], list[str] | None]:
    """The secondary servers whose zone is created again because their primaries' pods moved (a new
    pod, a new address: bindcar cannot change a zone's `primaries`), and the addresses the
    secondaries transfer from now (None: not known, offline, no secondary, or no ready pod of a
    primary: what was known is kept). A server known to lack the zone is created anyway; one that
    cannot be reached is left for a later run."""
    if zone is None or not secondaries or not dns.servers:
        return [], None
    now = sorted(zonecalls.sources(primaries, dns.servers))
    if not now:
        return [], None
    # an older record: what it was created with is not known
    if before is None or sorted(before) == now:
        return [], now
    return [s for i in secondaries if placed.get(i) == "secondary" and i not in errors
            for s in dns.servers_of(i)
            if s not in errors and not (s in seen and seen[s].rrsets is None)], now


@dataclasses.dataclass(frozen=True)
class _Known:
    """What one zone's plan is made from: the zone in Git (None: it left), what was observed of its
    servers, and what the agent owns there (an interrupted run's intent folded in)."""

    name: str
    zone: Zone | None
    dns: DnsObserved
    owned: ZoneOwnership
    seen: dict[str, ZoneObserved]
    managed: set[Key]
    placed: dict[str, str]  # instance -> role
    primaries: list[str]
    secondaries: list[str]


@dataclasses.dataclass
class _Moves:
    """What the plan does to the zone: on which servers, with which transfers, to which RRsets."""

    creates: list[tuple[str, str]]  # (server, role)
    deletes: list[str]
    renotify: list[str]
    after: dict[str, str]  # instance -> role
    repoint: list[str]
    sources: list[str] | None  # the addresses the secondaries transfer from
    notify: list[str] | None
    acl: list[str] | None
    managed_after: set[Key] = dataclasses.field(default_factory=set)
    records: dict[str, zoneplan.RRsetPlan] = dataclasses.field(default_factory=dict)
    kept: str = ""


def plan_zone(name: str, zone: Zone | None, dns: DnsObserved, *, force: bool = False) -> ZonePlan:
    """The whole plan of one zone (`zone` is None when the zone left Git: it is deleted from its
    servers, unless a primary serves RRsets in it that the agent did not write and `force` is not
    given)."""
    owned = dns.ownership.get(name) or ZoneOwnership(name)
    seen = dns.zones.get(name, {})
    managed, placed, unsure = recover(owned, list(seen.values()))
    primaries = [instance_id(k) for k in zone.primaries] if zone else []
    secondaries = [instance_id(k) for k in zone.secondaries] if zone else []
    known = _Known(name, zone, dns, owned, seen, managed, placed, primaries, secondaries)
    moved = _placements(primaries, secondaries, placed, unsure, seen, dns)
    moves = _moves(known, moved)
    if _blocked(known, moved):
        # blocked, nothing moves: keep what is known, including the interrupted run's intent
        moves = dataclasses.replace(moves, creates=[], deletes=[], renotify=[], after=placed,
                                    managed_after=managed, repoint=[], sources=None)
    else:
        _rrsets(known, moved, moves, force)
    return _zone_plan(known, moved, moves)


def _moves(known: _Known, moved: _Placement) -> _Moves:
    """The placement's moves, with the secondaries whose primaries' pods moved created again and
    the primaries told again when the addresses they notify or let transfer changed."""
    zone, dns, owned = known.zone, known.dns, known.owned
    primaries, secondaries, placed = known.primaries, known.secondaries, known.placed
    skip = {**moved.errors, **moved.waiting}  # servers nothing is written to in this run
    repoint, sources = _repoint(zone, primaries, secondaries, placed, skip, known.seen,
                                owned.transfer_from, dns)
    creates = moved.creates
    creates += [(s, "secondary") for s in repoint if (s, "secondary") not in creates]
    notify, acl = _notify(zone, secondaries, dns), _acl(zone, primaries, secondaries, dns)
    renotify = moved.renotify
    if _transfers_changed(owned, notify, acl):
        # secondaries' or agents' pods moved
        renotify = _tell(primaries, placed, creates, skip, renotify, dns)
    return _Moves(creates, moved.deletes, renotify, moved.after, repoint, sources, notify, acl)


def _transfers_changed(owned: ZoneOwnership, notify: list[str] | None,
                       acl: list[str] | None) -> bool:
    """Whether the addresses the primaries NOTIFY, or let transfer, are not those last written."""
    notified = owned.notify if owned.notify is not None or notify else []
    allowed = owned.allow_transfer if owned.allow_transfer is not None or acl else []
    return (notify is not None and notify != notified) or (acl is not None and acl != allowed)


def _blocked(known: _Known, moved: _Placement) -> bool:
    """Whether no server of any primary can be written (nothing moves)."""
    return bool(known.primaries) and all(
        all(s in moved.errors for s in known.dns.servers_of(p)) or p in moved.errors
        for p in known.primaries)


def _rrsets(known: _Known, moved: _Placement, moves: _Moves, force: bool) -> None:
    """The RRset plans and the RRsets the agent owns after them. A zone that left Git and holds
    foreign data is kept where it is (only the agent's RRsets in it are deleted)."""
    name, zone, managed = known.name, known.zone, known.managed
    if zone is None and moves.deletes and not force:
        kept, records = _keep_foreign(name, moves.deletes, managed, known.placed, known.seen)
        if kept:
            moves.kept, moves.records = kept, records
            moves.deletes, moves.after = [], dict(known.placed)
            moves.managed_after = managed - {c.key for p in records.values() for c in p.changes}
            return
    if zone is not None and known.primaries:
        writable = [p for p in known.primaries if p not in moved.waiting]
        moves.records, moves.managed_after = _records(name, zone, writable, moved.errors, managed,
                                                      known.seen, known.dns)
    else:
        # gone from every server: nothing is owned any more; else still on one the agent cannot
        # reach
        moves.managed_after = managed if moves.after else set()


def _in_sync(known: _Known, moved: _Placement, moves: _Moves) -> bool:
    """Whether the plan writes nothing and changes nothing the agent records."""
    changes = any(p.changes for p in moves.records.values())
    empty = not (moves.creates or moves.deletes or moves.renotify or changes)
    recovered = known.owned.pending is not None
    sources = moves.sources
    return (empty and not recovered and not moved.errors and not moved.waiting
            and moves.managed_after == known.managed and moves.after == known.placed
            and (sources is None or sources == known.owned.transfer_from))


def _zone_plan(known: _Known, moved: _Placement, moves: _Moves) -> ZonePlan:
    zone, dns, owned = known.zone, known.dns, known.owned
    primaries, secondaries, placed = known.primaries, known.secondaries, known.placed
    creates, renotify = moves.creates, moves.renotify
    instances = sorted({*primaries, *secondaries, *placed})
    told = creates or renotify
    return ZonePlan(known.name, zone, primaries, secondaries, creates, moves.deletes, renotify,
                    moves.records, moved.errors, managed_before=known.managed,
                    managed_after=moves.managed_after, placements_before=placed,
                    placements_after=moves.after, annotations=_gate_annotations(zone, owned),
                    recovered=owned.pending is not None, kept=moves.kept, observed=known.seen,
                    revision=owned.revision, in_sync=_in_sync(known, moved, moves),
                    waiting=moved.waiting, fresh=frozenset(s for s, _ in creates if s in dns.fresh),
                    pods={i: dns.pods[i] for i in instances if i in dns.pods},
                    notify_before=owned.notify,
                    notify=moves.notify if told or owned.notify is not None else None,
                    transfer_from_before=owned.transfer_from, transfer_from=moves.sources,
                    repoint=moves.repoint, reopen=moved.reopen if zone is not None else [],
                    allow_transfer_before=owned.allow_transfer,
                    allow_transfer=moves.acl if told or owned.allow_transfer is not None else None,
                    **_calls(zone, primaries, secondaries, creates, renotify + moved.reopen,
                             dns.servers))
