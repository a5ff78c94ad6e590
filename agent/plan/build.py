"""Assembles a Plan from a revision: offline (against an empty world) or from what a run observed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.desired.hierarchy import Desired
from agent.plan import kubediff
from agent.plan.model import Action, Change, KubeTarget, Plan, RRsetTarget, ZoneTarget, mask_secrets

if TYPE_CHECKING:  # pragma: no cover - types only
    from agent.reconcile.dns import DnsResult


def offline(desired: Desired, *, revision: str | None = None) -> Plan:
    """Desired against an empty world: every object, zone placement and RRset is a create."""
    changes: list[Change] = [
        Change(Action.CREATE, KubeTarget(o.key.kind, o.key.namespace, o.key.name), after=mask_secrets(o.body))
        for o in desired.objects
    ]
    for zone in desired.zones:
        primaries = [f"{k.namespace}/{k.name}" for k in zone.primaries]
        for role, keys in (("primary", zone.primaries), ("secondary", zone.secondaries)):
            for key in keys:
                after: dict[str, Any] = {"zoneType": role}
                if role == "secondary":
                    after["primaries"] = primaries
                changes.append(Change(Action.CREATE, ZoneTarget(zone.name, f"{key.namespace}/{key.name}", role),
                                      after=after))
    for zone in desired.zones:
        for rrset in sorted(zone.rrsets.values(), key=lambda r: (r.name.count("."), r.name, r.rtype)):
            changes.append(Change(Action.CREATE, RRsetTarget(zone.name, rrset.name, rrset.rtype),
                                  after={"ttl": rrset.ttl, "values": list(rrset.rdatas)}))
    return Plan(changes, list(desired.problems), revision)


def online_kube(desired: Desired, changes: list[kubediff.KubeChange], *, revision: str | None = None) -> Plan:
    """The Kubernetes layer of a plan against a live cluster (creates, updates, drift, deletes)."""
    out: list[Change] = []
    conflicts: list[str] = []
    for c in changes:
        target = KubeTarget(c.key.kind, c.key.namespace, c.key.name)
        if c.action == "conflict":
            conflicts.append(f"{target}: {c.reason}")
            continue
        reason = f"drift: {c.reason}" if c.drift else c.reason
        after = mask_secrets(c.desired.body) if c.desired is not None else None
        out.append(Change(Action(c.action), target, after=after, fields=c.fields, reason=reason))
    notes = ["DNS (zones and records) is not observed without zone endpoints; only the Kubernetes layer is planned."]
    return Plan(out, list(desired.problems), revision, conflicts, notes)


def _rrset_dict(rr: Any) -> dict[str, Any] | None:
    return None if rr is None else {"ttl": rr.ttl, "values": list(rr.rdatas)}


def online(desired: Desired, kube_changes: list[kubediff.KubeChange] | None, dns: DnsResult | None, *,
           revision: str | None = None) -> Plan:
    """A plan against the live world: the Kubernetes layer (if a cluster was given) and the DNS
    layer (if zone endpoints were given), as observed in this run."""
    result = online_kube(desired, kube_changes or [], revision=revision)
    if kube_changes is None:
        result.notes = ["Kubernetes is not observed without --kubeconfig; only DNS is planned."]
    if dns is None:
        return result
    result.notes = [n for n in result.notes if not n.startswith("DNS")]
    for zr in dns.zones:
        for inst in zr.created_on:
            role = "primary" if inst in zr.primaries else "secondary"
            result.changes.append(Change(Action.CREATE, ZoneTarget(zr.name, inst, role), after={"zoneType": role}))
        for c in zr.changes:
            name, rtype = c.key
            result.changes.append(Change(Action(c.action), RRsetTarget(zr.name, name, rtype),
                                         before=_rrset_dict(c.before), after=_rrset_dict(c.after)))
        result.conflicts += [f"{zr.name}: {c}" for c in zr.conflicts]
        result.notes += [f"refused: {zr.refused}"] if zr.refused else []
    for zone, inst in dns.deleted:
        result.changes.append(Change(Action.DELETE, ZoneTarget(zone, inst, "no longer selected")))
    return result
