"""plan(desired, observed) -> Plan: every change of the whole revision, before anything is written.

The same function serves `plan DIR` (offline: observed is an empty world that can reach every
instance), `sync --dry-run` and a real sync, so what a dry run shows is what a sync does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import operator
from collections.abc import Callable
from typing import Any

from agent.desired.hierarchy import Desired
from agent.desired.memo import NO_MEMO, Memo
from agent.model import names, servers
from agent.model.joined import Joined
from agent.model.key import ObjectKey
from agent.model.observed import DnsObserved, KubeObserved, Observed
from agent.model.scope import ALL, Scope, ScopeRule
from agent.plan import crddiff, kubechange, kubediff, rotation, zonediff, zoneplan
from agent.plan.changes import DRIFT, Action, Change, KubeTarget, Plan, RRsetTarget, ZoneTarget

NOT_OBSERVED_KUBE = "Kubernetes is not observed without --kubeconfig; only DNS is planned."
# a push's zones alone (scope CHANGED_ZONES): said instead of NOT_OBSERVED_KUBE
PUSH_FIRST = ("pushes first: this run applies the {zones} zone(s) the push changed; the reconcile "
              "of the whole revision it cut short follows at once (Kubernetes objects, statuses, "
              "every other zone)")
NOT_OBSERVED_DNS = ("DNS (zones and records) is not observed without zone endpoints; only the "
                    "Kubernetes layer is planned.")
RENOTIFY = "the secondaries' or the agent's pods moved"  # a primary's transfers written again
REOPEN = ("it refused the agent's zone transfer: its allow-transfer gets the agent's address, then "
          "the zone is read and planned again")
# The agent's own work, never drift (plan/changes.py `drifted`): a new pod's zones, what an
# interrupted run left, what a server gets with a zone created on it; and the drift a zone create
# repairs
NEW_POD = "a new pod: it waits for its zones"
FINISHED = "an interrupted run's writes, finished"
WITH_ZONE = "written with the zone, created on a server that lacked it"
ZONE_GONE = f"{DRIFT} the zone is gone from a server that had it (deleted by hand?)"


def empty_world(desired: Desired) -> Observed:
    """An offline plan's world: no objects, no zones, every instance reachable."""
    instances = {servers.instance_id(k) for z in desired.zones for k in z.instances}
    return Observed(KubeObserved({}, set(), set()), DnsObserved({}, {}, instances))


def kube_changes(desired: Desired, observed: KubeObserved, *, agent: str,
                 rotate_rndc_keys: bool = False, trust_hash: bool = False,
                 now: dt.datetime | None = None, memo: Memo = NO_MEMO,
                 ) -> list[kubechange.KubeChange]:
    """`rotate_rndc_keys`: every generated key Secret gets a new key now, by the same gap-free path
    as autoRotate (plan/rotation.py); `now`: the clock rotation decisions are made with; `memo`: the
    last revision's diff, list by list (kubediff.diff_parts)."""
    infrastructure, dropping = rotation.rotated_infrastructure(desired, observed.live,
                                                               now or dt.datetime.now(dt.UTC),
                                                               force=rotate_rndc_keys)
    objects = desired.objects
    if isinstance(objects, Joined):  # the infrastructure, then the CRs of each Git file
        parts = [objects.parts[0] if infrastructure is None else infrastructure, *objects.parts[1:]]
        changes = kubediff.diff_parts(parts, observed.live, observed.inventory, agent=agent,
                                      trust_hash=trust_hash, memo=memo)
    else:
        rotated = objects if infrastructure is None else [
            *infrastructure, *itertools.islice(objects, desired.infra, None)]
        changes = kubediff.diff(rotated, observed.live, observed.inventory, agent=agent,
                                trust_hash=trust_hash)
    dropped, why = (f"data.{names.PREVIOUS_SECRET_KEY}",
                    ), "RNDC key rotation rolled out: the previous key is dropped"
    drops = {o.key for o in dropping}
    changes = [dataclasses.replace(c, fields=(*c.fields, *dropped), reason=c.reason or why)
               if c.key in drops and c.action == "update" else c for c in changes]
    touched = {c.key for c in changes}
    changes += [kubechange.KubeChange("update", o.key, o, dropped, reason=why)
                for o in dropping if o.key not in touched]
    return changes


# a Zone, its ownership record, then what each primary serves (ZoneObserved)
_PlanInputs = tuple[Any, ...]


def _same_inputs(a: _PlanInputs, b: _PlanInputs) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))


def zone_plans(desired: Desired, observed: DnsObserved, memo: Memo = NO_MEMO, *,
               force: bool = False, only: set[str] | None = None) -> list[zoneplan.ZonePlan]:
    """A plan for every zone Git places, then for every zone the agent owns that Git dropped. With a
    memo, a zone's plan is the last one when nothing it comes from changed (the same desired zone -
    placement, annotations and RRsets: placement.place keeps the very object while they stay -, the
    same ownership record and observed objects: a zone nobody touched), compared by identity.
    `only`: just these zones (the second round for zones found stale while applying)."""
    if only is not None:
        plans = [zonediff.plan_zone(z.name, z, observed) for z in desired.zones if z.name in only]
    else:
        reachable = memo.token(("reachable",), frozenset(observed.reachable))
        # the zone API bodies' addresses
        servers = memo.token(("servers",), tuple(sorted(observed.servers.items())))
        # each instance's servers, as planned
        pods = memo.token(("pods",), tuple(sorted(observed.pods.items())))
        inputs: list[_PlanInputs] = [(z, observed.ownership.get(z.name),
                                      *observed.zones.get(z.name, {}).values())
                                     for z in desired.zones]
        plans = memo.each(("zone-plans",), inputs,
                          lambda i: zonediff.plan_zone(i[0].name, i[0], observed),
                          name=lambda i: i[0].name, same=_same_inputs,
                          shared=(reachable, servers, pods))
        memo.sweep()
    wanted = {z.name for z in desired.zones}
    plans += [zonediff.plan_zone(name, None, observed, force=force)
              for name in sorted(observed.ownership)
              if name not in wanted and (only is None or name in only)]
    return [p for p in plans if p.zone is not None or p.deletes or p.errors or p.managed_before
            or p.kept]


@dataclasses.dataclass(frozen=True)
class KubeChoices:
    """What the operator chose for the Kubernetes side beyond what the revision declares:
    `rotate_rndc_keys`: every generated key Secret gets a new key now (plan/rotation.py), on the
    clock `now` (default: the current time); `create_namespaces`: missing namespaces are created,
    not reported."""

    rotate_rndc_keys: bool = False
    create_namespaces: bool = False
    now: dt.datetime | None = None


@dataclasses.dataclass(frozen=True)
class Recalled:
    """What the last revision left, so that this one is planned at the cost of its change: `memo`,
    its zone plans, for zones nothing changed in; `kube_memo`, its Kubernetes diff, list by list (a
    memo swept with each revision: the expansion's); `trust_hash`: the Kubernetes objects were
    remembered, not read back (see kubediff.diff)."""

    memo: Memo = dataclasses.field(default_factory=lambda: NO_MEMO)
    kube_memo: Memo = dataclasses.field(default_factory=lambda: NO_MEMO)
    trust_hash: bool = False


KUBE_DEFAULTS = KubeChoices()
NOTHING_RECALLED = Recalled()


def build(desired: Desired, observed: Observed, *, revision: str | None = None,
          agent: str = names.DEFAULT_AGENT_NAMESPACE, force: bool = False, scope: Scope = ALL,
          choices: KubeChoices = KUBE_DEFAULTS, recalled: Recalled = NOTHING_RECALLED) -> Plan:
    """`choices`: the operator's for the Kubernetes side (KubeChoices); `recalled`: what the last
    revision left (Recalled); `force`: a zone that left Git is deleted even where it holds RRsets
    the agent did not write (zonediff.plan_zone); `scope`: the zones planned (zone_plans; a push's
    zones say so in a note instead of Kubernetes' absence). The plan is made whole here and never
    edited after (the gate's refusals come with a copy: agent/gate/verdict.py)."""
    now, rotate_rndc_keys = choices.now, choices.rotate_rndc_keys
    kube = (kube_changes(desired, observed.kube, agent=agent, rotate_rndc_keys=rotate_rndc_keys,
                         trust_hash=recalled.trust_hash, now=now, memo=recalled.kube_memo)
            if observed.kube is not None else None)
    only = None if scope.zones is None else set(scope.zones)
    zones = zone_plans(desired, observed.dns, recalled.memo, force=force,
                       only=only) if observed.dns is not None else None
    changes: list[Change] = []
    conflicts: list[str] = []
    notes: list[str] = []
    unplanned: list[str] = []
    kube_managed, crds, (namespaces, blocked, inventory) = _cluster_side(
        desired, observed.kube, kube, agent=agent, create_namespaces=choices.create_namespaces)
    _cluster_view(changes, crds, namespaces, desired)
    _kube_view(changes, conflicts, kube or [])
    _zone_view(changes, conflicts, unplanned, zones or [])
    if kube is None and scope.rule is ScopeRule.CHANGED_ZONES:
        notes.append(PUSH_FIRST.format(zones=len(only or ())))
    elif kube is None:
        notes.append(NOT_OBSERVED_KUBE)
    # a key whose last rotation rolls out waits: said
    elif rotate_rndc_keys and observed.kube is not None:
        notes += rotation.why_not(desired, observed.kube.live, now or dt.datetime.now(dt.UTC))
    if zones is None:
        notes.append(NOT_OBSERVED_DNS)
    return Plan(changes, list(desired.problems), revision, conflicts, notes, kube, zones,
                kube_managed=kube_managed, unplanned=unplanned, namespaces=namespaces, crds=crds,
                blocked=blocked, inventory=inventory)


Namespaces = tuple[list[str], dict[ObjectKey, str], list[ObjectKey] | None]


def _cluster_side(desired: Desired, observed: KubeObserved | None,
                  kube: list[kubechange.KubeChange] | None, *, agent: str,
                  create_namespaces: bool) -> tuple[int, list[kubechange.CrdChange], Namespaces]:
    """What the plan says of the cluster besides its objects' changes: how many objects the agent
    manages (the prune gate's base; without a delete, not asked), the CRDs to install, and the
    namespaces (`_namespaces`)."""
    if observed is None:
        return 0, [], ([], {}, None)
    kube_managed = 0
    if any(c.action == "delete" for c in kube or []):
        kube_managed = sum(1 for key, body in observed.live.items()
                           if kubediff.prunable(key, body, agent))
    crds = crddiff.diff(observed.crds) if observed.crds is not None else []
    return kube_managed, crds, _namespaces(desired, observed, agent=agent,
                                           create=create_namespaces)


def _namespaces(desired: Desired, observed: KubeObserved, *, agent: str,
                create: bool) -> Namespaces:
    """The namespaces the revision needs that do not exist: created first when allowed, else their
    objects are not applied (and say why); and the inventory the agent keeps in its own namespace:
    (namespaces created, objects blocked and why, the inventory or None)."""
    wanted = {o.key.namespace for o in desired.objects if o.key.namespace} | {agent}
    missing = sorted(wanted - observed.namespaces)
    created: list[str] = []
    blocked: dict[ObjectKey, str] = {}
    if create:
        created = missing
    else:
        why = {ns: (f"namespace {ns} does not exist: create it (the agent does not create "
                    # one message per namespace, not per object
                    "namespaces unless run with --create-namespaces)") for ns in missing}
        if why:
            blocked = {o.key: why[o.key.namespace] for o in desired.objects
                       if o.key.namespace in why}
    inventory = None
    if agent in observed.namespaces or create:
        inventory = [o.key for o in desired.objects]  # sorted when written (reconcile/kubeapply.py)
    return created, blocked, inventory


def offline(desired: Desired, *, revision: str | None = None) -> Plan:
    """Desired against an empty world: every object, zone placement and RRset is a create."""
    return build(desired, empty_world(desired), revision=revision)


_ACTIONS = {a.value: a for a in Action}  # Action(value) costs a call into enum per change
NAMESPACE_DECLARED = "created: objects are declared in it"
NAMESPACE_AGENT = "created: the agent's own namespace (its inventory and state)"


def _cluster_view(changes: list[Change], crds: list[kubechange.CrdChange], namespaces: list[str],
                  desired: Desired) -> None:
    """The plan lines of what apply writes before the revision's objects: Bindy's CRDs, then the
    namespaces it creates."""
    add = changes.append
    for crd in crds:
        add(Change(_ACTIONS[crd.action], KubeTarget("CustomResourceDefinition", None, crd.name),
                   new=crd.body, fields=crd.fields, reason=crddiff.REASON[crd.action]))
    declared = {o.key.namespace for o in desired.objects
                if o.key.namespace} if namespaces else set()
    for ns in namespaces:
        add(Change(Action.CREATE, KubeTarget("Namespace", None, ns),
                   new=kubechange.namespace_body(ns),
                   reason=NAMESPACE_DECLARED if ns in declared else NAMESPACE_AGENT))


def _kube_view(lines: list[Change], conflicts: list[str],
               changes: list[kubechange.KubeChange]) -> None:
    add = lines.append
    for c in changes:
        target = KubeTarget(*c.key)
        if c.action == "conflict":
            conflicts.append(f"{target}: {c.reason}")
            continue
        reason = f"{DRIFT} {c.reason}" if c.drift else c.reason
        add(Change(_ACTIONS[c.action], target, new=c.desired, fields=c.fields, reason=reason))


def _zone_view(changes: list[Change], conflicts: list[str], unplanned: list[str],
               zones: list[zoneplan.ZonePlan]) -> None:
    add = changes.append
    for zp in zones:
        if zp.kept:  # it left Git, and stays: it holds data the agent did not write
            conflicts.append(f"{zp.name}: {zp.kept}")
        if zp.in_sync:  # nothing to do: its conflicts at most
            conflicts += [f"{zp.name}: {c}" for c in zp.conflicts]
            continue
        _placement_view(add, zp)
        unplanned += [f"{zp.name} on {i}: {e.removeprefix(f'{i}: ')}"
                      for i, e in sorted(zp.errors.items())]
        conflicts += [f"{zp.name}: {c}" for c in zp.conflicts]
    # shallow names first; a zone's keys are unique, so no two changes compare equal
    for zp in zones:
        if zp.in_sync:
            continue
        own = _own_rrsets(zp)
        for _, (name, rtype), c in sorted([((key := c.key)[0].count("."), key, c)
                                           for c in zp.rrset_changes],
                                          key=lambda k: k[:2]):
            add(Change(_ACTIONS[c.action], RRsetTarget(zp.name, name, rtype), old=c.before,
                       new=c.after, reason=own.get((name, rtype), "")))


def _placement_view(add: Callable[[Change], None], zp: zoneplan.ZonePlan) -> None:
    """The plan lines of a zone's placements: the servers it leaves, those it is created on, and
    the primaries whose transfers are written again."""
    for instance in zp.deletes:
        kept = instance in zp.primaries + zp.secondaries
        role = "role changed" if kept else "no longer selected"
        add(Change(Action.DELETE, ZoneTarget(zp.name, instance, role)))
    # the body the zone API gets (without the addresses: what is known)
    for instance, role in zp.creates:
        after: dict[str, Any] = zp.bodies.get(instance) or {"zoneType": role}
        if instance not in zp.bodies and role == "secondary":
            after = {**after, "primaries": list(zp.primaries)}
        add(Change(Action.CREATE, ZoneTarget(zp.name, instance, role), new=after,
                   reason=zp.unbuildable.get(instance) or _created_why(zp, instance, role)))
    # the primaries' transfers (also-notify, allow-transfer), written again
    told = [(i, RENOTIFY) for i in zp.renotify] + [(i, REOPEN) for i in zp.reopen]
    for instance, why in told:
        sent = zp.transfers.get(instance)
        shown = sent.as_dict() if sent is not None else {"alsoNotify": list(zp.secondaries)}
        add(Change(Action.UPDATE, ZoneTarget(zp.name, instance, "primary"), new=shown,
                   fields=tuple(shown), reason=why))


def _created_why(zp: zoneplan.ZonePlan, server: str, role: str) -> str:
    """Why a zone is created on a server: the agent's own work (a new pod, primaries that moved, a
    new placement, an interrupted run), or drift (a server that had it lost it)."""
    if server in zp.repoint:
        return "its primaries' pods moved: removed and created again"
    if server in zp.fresh:
        return NEW_POD
    if zp.recovered:
        return FINISHED
    seen = zp.observed.get(server)
    had = zp.placements_before.get(servers.instance_of(server)) == role
    return ZONE_GONE if had and (role == "secondary"
                                 or (seen is not None and seen.rrsets is None)) else ""


def _own_rrsets(zp: zoneplan.ZonePlan) -> dict[tuple[str, str], str]:
    """The RRset changes that are the agent's own work: each only on servers the zone is created on
    (a new pod, a repointed secondary), or in a zone whose interrupted run is finished now."""
    created = {s for s, _ in zp.creates}
    if zp.recovered:
        return {c.key: FINISHED for p in zp.records.values() for c in p.changes}
    if not created:
        return {}
    elsewhere = {c.key for s, p in zp.records.items() if s not in created for c in p.changes}
    return {c.key: WITH_ZONE for s in created if s in zp.records for c in zp.records[s].changes
            if c.key not in elsewhere}
