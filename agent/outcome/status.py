"""What each CR's `.status` should say after a sync, computed from what apply did.

Conditions follow seeds/002: `Ready`, `Progressing`, `Degraded`, each with a reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.desired import rrsets
from agent.desired.hierarchy import Desired
from agent.model import kinds
from agent.model.key import ObjectKey
from agent.reconcile.dnsapply import DnsResult, ZoneResult
from agent.reconcile.kubeapply import KubeResult


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


def _zone_conditions(zr: ZoneResult | None) -> list[dict[str, str]]:
    if zr is None:
        return conditions(Outcome(False, "the zone selects no Bind9Instance, so it is not served", "NoInstances"))
    if zr.primary_error:
        return conditions(Outcome(False, f"Failed to configure zone on primaries: {zr.primary_error}", "PrimaryFailed"))
    if zr.refused:
        return conditions(Outcome(False, zr.refused, "PlanRefused"))
    configured = [i for i, (state, _) in zr.instances.items() if state == "Configured"]
    primaries = sum(1 for i in configured if i in zr.primaries)
    secondaries = len(configured) - primaries
    message = f"Configured on {primaries} primary server(s) and {secondaries} secondary server(s)"
    bad = sorted({f"{c.server} ({c.name} {c.rtype})" for c in zr.checks if not c.ok})
    if zr.secondary_error:
        degraded = _condition("Degraded", "True", "SecondaryFailed",
                              f"{message}, but secondary configuration failed: {zr.secondary_error}")
    elif bad:
        degraded = _condition("Degraded", "True", "NotServed", "not answering the new data: " + ", ".join(bad[:10]))
    else:
        degraded = _condition("Degraded", "False", "ReconcileSucceeded", "")
    return [_condition("Ready", "True", "ReconcileSucceeded", message), degraded]


def _record_conditions(zr: ZoneResult | None, owner: str, rtype: str) -> list[dict[str, str]]:
    if zr is None or zr.primary_error or zr.refused:
        why = "its zone selects no instance" if zr is None else (zr.primary_error or zr.refused)
        return conditions(Outcome(False, f"Failed to configure record: {why}", "RecordFailed"))
    conflict = next((c for c in zr.conflicts if c.startswith(f"{owner} {rtype}:")), None)
    if conflict:
        return conditions(Outcome(False, f"Failed to configure record: conflict: {conflict}", "RecordFailed"))
    checks = [c for c in zr.checks if (c.name, c.rtype) == (owner, rtype)]
    configured = sum(1 for s, _ in zr.instances.values() if s == "Configured")
    served = sum(1 for c in checks if c.ok) if checks else configured
    if checks and served < len(checks):
        missing = ", ".join(c.server for c in checks if not c.ok)
        return conditions(Outcome(False, f"Record configured, but not served yet by: {missing}", "RecordFailed"))
    return conditions(Outcome(True, f"Record configured on {served} endpoint(s)"))


def statuses(desired: Desired, outcomes: dict[ObjectKey, Outcome], *, revision: str | None,
             generations: dict[ObjectKey, int], service_ips: dict[ObjectKey, str],
             dns: DnsResult | None = None) -> dict[ObjectKey, dict[str, Any]]:
    """The status of every CR in `desired`, keyed by the CR."""
    out: dict[ObjectKey, dict[str, Any]] = {}
    zones_by_instance: dict[ObjectKey, list[Any]] = {}
    for zone in desired.zones:
        for inst in zone.instances:
            zones_by_instance.setdefault(inst, []).append(zone)
    record_zone = {rk: z for z in desired.zones for rk in z.records}
    zones_by_key = {z.key: z for z in desired.zones}

    zone_results = {z.key: z for z in dns.zones} if dns else {}
    record_kinds = {k.name for k in kinds.RECORD_KINDS}
    for obj in desired.objects:
        key = obj.key
        if key.kind not in kinds.KINDS:
            continue
        outcome = outcomes.get(key, Outcome(True))
        in_dns = key.kind == "DNSZone" or key.kind in record_kinds
        status: dict[str, Any] = {"conditions": conditions(outcome, dns_pending=in_dns and dns is None and outcome.ok)}
        if in_dns and dns is not None and outcome.ok:
            if key.kind == "DNSZone":
                status["conditions"] = _zone_conditions(zone_results.get(key))
            elif key in record_zone:
                owner, rtype = record_zone[key].records[key]
                status["conditions"] = _record_conditions(zone_results.get(record_zone[key].key), owner, rtype)
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
                zr = zone_results.get(key)
                states = zr.instances if zr else {}
                status["bind9Instances"] = [
                    _ref(i, status=states.get(f"{i.namespace}/{i.name}", ("Claimed", ""))[0],
                         message=states.get(f"{i.namespace}/{i.name}", ("Claimed", ""))[1] or None)
                    for i in placed.instances]
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


def _outcomes(desired: Desired, result: KubeResult) -> dict[ObjectKey, Outcome]:
    """Each Git CR fails when it, or anything generated from it, failed."""
    outcomes: dict[ObjectKey, Outcome] = {}
    for obj in desired.objects:
        if obj.key in result.failed:
            for cr in {obj.key, obj.source} - {None}:
                assert cr is not None
                outcomes[cr] = Outcome(False, f"{obj.key}: {result.failed[obj.key]}", "ApplyFailed")
                if obj.owner is not None:
                    outcomes[obj.owner] = outcomes[cr]
    return outcomes


def wanted(desired: Desired, result: KubeResult, *, revision: str | None, dns: DnsResult | None = None,
           ) -> dict[ObjectKey, dict[str, Any]]:
    """Every CR's status after a sync, from what the Kubernetes and DNS steps did."""
    live = result.live
    generations = {k: v["metadata"].get("generation", 0) for k, v in live.items() if k.kind in kinds.KINDS}
    service_ips = {ObjectKey("Bind9Instance", k.namespace, k.name): v.get("spec", {}).get("clusterIP", "")
                   for k, v in live.items() if k.kind == "Service" and v.get("spec", {}).get("clusterIP")}
    return statuses(desired, _outcomes(desired, result), revision=revision, generations=generations,
                    service_ips=service_ips, dns=dns)
