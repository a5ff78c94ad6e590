"""What each CR's `.status` should say after a sync (pure), and whether it changed.

Conditions follow seeds/002: `Ready`, `Progressing`, `Degraded`, each with a reason. A status is
written only when it differs from the live one (the seed's status-update optimisation): a
condition keeps its `lastTransitionTime` unless its status flipped.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent import rrsets
from agent.desired import Desired
from agent.loader import ObjectKey
from agent.model import kinds


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What happened to one CR in this sync."""

    ok: bool
    message: str = ""
    reason: str = ""


def _condition(ctype: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def conditions(outcome: Outcome, *, dns_pending: bool = False) -> list[dict[str, str]]:
    if not outcome.ok:
        return [_condition("Ready", "False", outcome.reason or "ReconcileFailed", outcome.message),
                _condition("Degraded", "True", outcome.reason or "ReconcileFailed", outcome.message)]
    if dns_pending:
        msg = "applied to Kubernetes; DNS is configured when the agent runs with zone endpoints"
        return [_condition("Ready", "Unknown", "WaitingForDns", msg),
                _condition("Progressing", "True", "WaitingForDns", msg)]
    return [_condition("Ready", "True", "ReconcileSucceeded", outcome.message or "Reconciled"),
            _condition("Degraded", "False", "ReconcileSucceeded", "")]


def _ref(key: ObjectKey, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": kinds.API_VERSION, "kind": key.kind, "name": key.name,
            "namespace": key.namespace, **extra}


def statuses(desired: Desired, outcomes: dict[ObjectKey, Outcome], *, revision: str | None,
             generations: dict[ObjectKey, int], service_ips: dict[ObjectKey, str],
             dns_pending: bool = True) -> dict[ObjectKey, dict[str, Any]]:
    """The status of every CR in `desired`, keyed by the CR."""
    out: dict[ObjectKey, dict[str, Any]] = {}
    zones_by_instance: dict[ObjectKey, list[Any]] = {}
    for zone in desired.zones:
        for inst in zone.instances:
            zones_by_instance.setdefault(inst, []).append(zone)
    record_zone = {rk: z for z in desired.zones for rk in z.records}
    zones_by_key = {z.key: z for z in desired.zones}

    for obj in desired.objects:
        key = obj.key
        if key.kind not in kinds.KINDS:
            continue
        outcome = outcomes.get(key, Outcome(True))
        pending = dns_pending and (key.kind == "DNSZone" or key.kind in {k.name for k in kinds.RECORD_KINDS})
        status: dict[str, Any] = {"conditions": conditions(outcome, dns_pending=pending and outcome.ok)}
        if key in generations:
            status["observedGeneration"] = generations[key]
        if revision:
            status["lastAppliedRevision"] = revision
        if key.kind == "Bind9Cluster":
            names = sorted(i.key.name for i in desired.instances.values()
                           if i.key.namespace == key.namespace and i.cluster == key.name)
            ready = [n for n in names if outcomes.get(ObjectKey("Bind9Instance", key.namespace, n), Outcome(True)).ok]
            status.update(instances=names, instanceCount=len(names), readyInstances=len(ready))
        elif key.kind == "ClusterBind9Provider":
            names = sorted(f"{i.key.namespace}/{i.key.name}" for i in desired.instances.values()
                           if i.provider == key.name)
            status.update(instances=names, instanceCount=len(names), readyInstances=len(names))
        elif key.kind == "Bind9Instance":
            instance = desired.instances.get(key)
            if instance is not None:
                status["clusterRef"] = {"apiVersion": kinds.API_VERSION, "kind": "Bind9Cluster",
                                        "name": instance.cluster, "namespace": key.namespace}
            zones = zones_by_instance.get(key, [])
            status["zones"] = [_ref(z.key, zoneName=z.name.rstrip(".")) for z in zones]
            status["zonesCount"] = len(zones)
            selected = [z for z in zones if z.selection_method == "labelSelector"]
            if selected:
                status["selectedZones"] = [{"name": z.key.name, "namespace": z.key.namespace,
                                            "zoneName": z.name.rstrip(".")} for z in selected]
            if key in service_ips:
                status["serviceAddress"] = service_ips[key]
        elif key.kind == "DNSZone":
            placed = zones_by_key.get(key)
            if placed is not None:
                status["bind9Instances"] = [_ref(i, status="Claimed") for i in placed.instances]
                status["bind9InstancesCount"] = len(placed.instances)
                status["records"] = [_ref(rk, recordName=owner) for rk, (owner, _) in sorted(
                    placed.records.items(), key=lambda kv: str(kv[0]))]
                status["recordsCount"] = len(placed.records)
                if placed.selection_method:
                    status["selectionMethod"] = placed.selection_method
                if placed.selected_by_instance:
                    status["selectedByInstance"] = placed.selected_by_instance
        else:
            home = record_zone.get(key)
            if home is not None:
                owner, rtype = home.records[key]
                status["zone"] = home.name.rstrip(".")
                status["zoneRef"] = _ref(home.key, zoneName=home.name.rstrip("."))
                status["publishedName"] = owner
                rrset = home.rrsets.get((owner, rtype))
                if rrset is not None:
                    status["addresses"] = rrsets.addresses(rrset)
        out[key] = status
    return out


def _strip_times(status: dict[str, Any]) -> dict[str, Any]:
    copy = dict(status)
    copy["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                          for c in status.get("conditions") or []]
    return copy


def merge_times(new: dict[str, Any], live: dict[str, Any] | None, now: str) -> dict[str, Any]:
    """Gives each new condition its old transition time when its status did not change."""
    old = {c.get("type"): c for c in (live or {}).get("conditions") or []}
    conds = []
    for c in new.get("conditions", []):
        prev = old.get(c["type"])
        kept = prev.get("lastTransitionTime") if prev and prev.get("status") == c["status"] else None
        conds.append({**c, "lastTransitionTime": kept or now})
    return {**new, "conditions": conds}


def changed(new: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """True if writing `new` would change anything the agent owns in the live status."""
    if not live:
        return True
    want, have = _strip_times(new), _strip_times(live)
    return any(have.get(k) != v for k, v in want.items())
